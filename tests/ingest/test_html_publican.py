"""A Publican (DocBook) page, shaped like the Debian Administrator's Handbook's: its navigation
(`#banner`, `ul.docnav`) is chrome, its `div.sidebar` boxes ("BACK TO BASICS", "NOTE") are prose
and stay; a sidebar made of links is a theme's navigation and goes (issue 30)."""

from __future__ import annotations

from cuerag.ingest.formats.html import extract_html

PAGE = """<html><head><title>9.10. Backup</title></head><body>
<div id="banner"><a href="https://debian-handbook.info/get/"><span class="text">Download the ebook</span></a></div>
<p id="title"><a class="left" href="https://www.debian.org"><img src="Common_Content/images/image_left.png"></a></p>
<ul class="docnav top"><li class="previous"><a accesskey="p" href="sect.rsh.html"><strong>Prev</strong></a></li>
<li class="home">The Debian Administrator's Handbook</li>
<li class="next"><a accesskey="n" href="sect.hotplug.html"><strong>Next</strong></a></li></ul>
<div class="section"><div class="titlepage"><div><div><h2 class="title">9.10. Backup</h2></div></div></div>
<div class="para">Making backups has to be one of the main responsibilities of any administrator.</div>
<div class="sidebar"><div class="titlepage"><div><div>
<p class="title"><strong>BACK TO BASICS Backup vs archive</strong></p></div></div></div>
<div class="para">A backup is a secondary copy of data; an archive is a copy kept for the long term.</div></div>
<div class="para">The rsnapshot package offers <a href="sect.rsh.html">remote</a> backups.</div>
</div>
<div class="sidebar"><a href="a.html">Backup</a> <a href="b.html">Hotplug</a> <a href="c.html">Power</a></div>
<ul class="docnav">
<li class="previous"><a accesskey="p" href="sect.rsh.html"><strong>Prev</strong>9.9. Remote Login</a></li>
<li class="up"><a accesskey="u" href="#"><strong>Up</strong></a></li>
<li class="home"><a accesskey="h" href="index.html"><strong>Home</strong></a></li>
<li class="next"><a accesskey="n" href="sect.hotplug.html"><strong>Next</strong>9.11. Hot Plugging</a></li></ul>
</body></html>"""


def test_publican_navigation_is_chrome_and_its_sidebars_are_prose() -> None:
    found = extract_html(PAGE.encode(), name="sect.backup.html", source="sect.backup.html")
    for chrome in ("Download the ebook", "Prev", "Next", "Up", "Home", "Administrator", "Hotplug", "Power"):
        assert chrome not in found.text
    assert "BACK TO BASICS Backup vs archive" in found.text
    assert "an archive is a copy kept for the long term" in found.text
    assert "Making backups" in found.text and "remote backups" in found.text
