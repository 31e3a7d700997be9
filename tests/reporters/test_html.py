"""The ``html`` reporter: a self-contained page, escaping, the fix-first list, results by
area, and, in a real browser (headless Chromium), the rendering and the filters."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from aiaudit.core.escape import human_safe
from aiaudit.core.model import (
    Finding,
    Remediation,
    Result,
    RuleInfo,
    Severity,
    Snippet,
    Status,
)
from aiaudit.reporters.html import render
from tests.helpers import CpuTime, cli
from tests.reporters.samples import mixed_run
from tests.reporters.scans import scan_root
from tests.reporters.test_text import BAD_HOST, HOSTILE, _hostile_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")


class _Rows(HTMLParser):
    """Result rows of a page: (rule id, status, severity, hidden)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str, str, bool]] = []
        self.body: dict[str, str | None] = {}
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        self.attrs += attrs
        if tag == "body":
            self.body = a
        if tag == "tr" and "result" in (a.get("class") or "").split():
            self.rows.append((a["data-rule"] or "", a["data-status"] or "",
                              a["data-severity"] or "", "hidden" in a))


def _rows(page: str) -> _Rows:
    p = _Rows()
    p.feed(page)
    return p


def _bad_run():
    run = scan_root(BAD_HOST)
    return replace(run, host=replace(run.host, root="/mnt/bad-host"))


def test_self_contained_no_external_resource() -> None:
    page = render(_bad_run(), {})
    p = _rows(page)
    assert not {"link", "img", "iframe", "object", "embed"} & p.tags
    for name, value in p.attrs:
        if name in ("src", "href", "action"):
            assert value is None or value.startswith("#"), (name, value)
    assert "@import" not in page and "url(" not in page and "http://" not in page
    assert "https://" not in page  # references are not in this page (explain shows them)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


def test_every_result_and_failing_rule_id_is_present() -> None:
    run = _bad_run()
    page = render(run, {})
    rows = _rows(page).rows
    assert len(rows) == len(run.findings)
    failing = {f.rule_id for f in run.findings if f.status is Status.FAIL}
    assert failing <= {r for r, st, _, _ in rows if st == "fail"}
    assert not any(hidden for *_, hidden in rows)  # without script nothing is hidden
    # header: identity, counts, verdict; the fix-first list holds the firewall fix once
    assert "bad-node" in page and "Debian GNU/Linux 12 (bookworm)" in page
    assert 'id="verdict">Exit code 1 (findings)' in page
    assert page.count("\nflush ruleset\n") == 1
    assert page.index('id="fix-first"') < page.index('id="results"')
    assert "no training user is known" in page


def test_failure_detail_has_expected_actual_evidence_and_fix() -> None:
    page = render(mixed_run(), {})
    i = page.index('data-rule="SYSCTL-VM-MAX-MAP-COUNT"')
    detail = page[i:page.index("</tr>", page.index('class="detail"', i))]
    assert "<dt>expected</dt><dd>&gt;= 262144</dd>" in detail
    assert "<dt>actual</dt><dd>65530</dd>" in detail
    assert "<code>/proc/sys/vm/max_map_count = 65530</code>" in detail
    assert "/etc/sysctl.d/60-x.conf:2: vm.max_map_count = 262144" in detail
    assert 'Persist vm.max_map_count = 262144 and apply it now. (<a href="#fix-2">fix 2</a>)' \
        in detail


def test_hostile_values_are_escaped() -> None:
    run = _hostile_run()
    evil = "<script>alert(1)</script>\"'&"
    bad = Finding("X", "c", Severity.HIGH, evil, Result(
        Status.FAIL, evil, evil, expected=evil, actual=evil,
        remediation=Remediation(evil, (Snippet.command(f"echo {evil}"),))))
    run = replace(run, findings=(*run.findings, bad),
                  rules=(*run.rules, RuleInfo("X", "c", Severity.HIGH, evil)))
    page = render(run, {})
    for ch in ("\x1b", "\x07", "\r", "\x00", "\x08", "\x9b", "\u202e"):
        assert ch not in page, repr(ch)
    assert page.count("<script>") == 1  # ours, at the end
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;&amp;" in page
    assert human_safe(HOSTILE.split("\n")[0]).replace("&", "&amp;") in page
    assert "host evil\\x1b]0;pwned" in page


def test_500_results_render_fast_and_compact() -> None:
    base = mixed_run()
    many = tuple(replace(base.findings[i % len(base.findings)],
                         result=replace(base.findings[i % len(base.findings)].result,
                                        subject=f"s{i}"))
                 for i in range(500))
    run = replace(base, findings=many)
    with CpuTime() as t:
        page = render(run, {})
    assert t.seconds < 2.0, f"{t.seconds:.2f} s of CPU"
    assert len(_rows(page).rows) == 500
    assert len(page) < 1_500_000


def test_empty_run_renders() -> None:
    from tests.reporters.samples import empty_run

    page = render(empty_run(), {})
    assert "No results." in page and "Fix first" not in page


def test_render_saved_scan_as_html(tmp_path: Path) -> None:
    saved, page = tmp_path / "scan.json", tmp_path / "scan.html"
    r = cli("scan", "--root", str(BAD_HOST), "--offline", "--output", f"json:{saved}",
            "--output", f"html:{page}")
    assert r.code == 1, r.err
    scanned = page.read_text(encoding="utf-8")
    assert scanned.startswith("<!DOCTYPE html>")
    again = cli("render", str(saved), "--format", "html")
    assert again.code == 0, again.err
    assert again.out == scanned  # a saved scan renders to the same page


# ------------------------------------------------------------------ in a real browser

def _need_chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return CHROMIUM


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = _need_chromium()
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=90, cwd=tmp_path)


def _page(tmp_path: Path) -> Path:
    page = tmp_path / "bad-host.html"
    page.write_text(render(_bad_run(), {}), encoding="utf-8")
    return page


@pytest.mark.slow
def test_chromium_screenshot_of_the_bad_host_report(tmp_path: Path) -> None:
    """The page renders in a real browser: a PNG of the expected size with content (kept at
    $AIAUDIT_ARTIFACTS/bad-host.png when that is set, to look at)."""
    page = _page(tmp_path)
    png = tmp_path / "bad-host.png"
    r = _chromium(tmp_path, "--window-size=1280,2400", f"--screenshot={png}", page.as_uri())
    assert png.is_file(), r.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2400)
    assert len(data) > 50_000  # text and colour, not a blank page
    if os.environ.get("AIAUDIT_ARTIFACTS"):
        shutil.copy(png, Path(os.environ["AIAUDIT_ARTIFACTS"]) / "bad-host.png")


@pytest.mark.slow
def test_chromium_dom_default_filters_and_fragment_filters(tmp_path: Path) -> None:
    """After the page's script ran: by default failures, errors and waived results show and
    passed / not-applicable ones are hidden; a URL fragment selects statuses and severities;
    every failing rule id is in the DOM."""
    page = _page(tmp_path)
    run = _bad_run()
    failing = {f.rule_id for f in run.findings if f.status is Status.FAIL}

    default = _chromium(tmp_path, "--dump-dom", page.as_uri())
    p = _rows(default.stdout)
    assert len(p.rows) == len(run.findings), default.stderr[-2000:]
    assert p.body.get("data-filter") == (
        "status=fail,error,waived&severity=critical,high,medium,low,info")
    for rule, status, _sev, hidden in p.rows:
        assert hidden == (status in ("pass", "skip")), (rule, status)
    assert failing <= {r for r, st, _, hidden in p.rows if st == "fail" and not hidden}

    frag = _chromium(tmp_path, "--dump-dom", page.as_uri() + "#status=fail&severity=high")
    p = _rows(frag.stdout)
    shown = [(r, st, sev) for r, st, sev, hidden in p.rows if not hidden]
    want = [(f.rule_id, "fail", "high") for f in run.findings
            if f.status is Status.FAIL and f.severity is Severity.HIGH]
    assert sorted(shown) == sorted(want) and shown
    assert p.body.get("data-filter") == "status=fail&severity=high"
    # detail rows follow their result row
    dom = frag.stdout
    for m in re.finditer(r'<tr id="([^"]+)" class="result"[^>]*?( hidden="")?>', dom):
        detail = re.search(rf'<tr class="detail" id="{re.escape(m.group(1))}-d"([^>]*)>', dom)
        assert detail is not None
        assert ("hidden" in detail.group(1)) == bool(m.group(2)), m.group(1)
