"""Recall over benchmark question sets, throughput benchmarks, titleless variants."""
