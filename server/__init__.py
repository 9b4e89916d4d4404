"""The MCP application: settings, wiring of tools to the engine, transports and auth."""
