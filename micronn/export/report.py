"""The firmware's size and cost as one HTML page: sections, the largest symbols, and every kernel call."""

from __future__ import annotations

import html

from micronn.export.firmware import RunResult
from micronn.export.project import Project


def _table(rows: list[list[object]], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(f'{c:,}' if isinstance(c, int) else str(c))}</td>"
                                    for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_html(proj: Project, res: RunResult) -> str:
    """A self-contained page: what the image holds (read from its ELF) and what one inference cost."""
    sections = [[name, s["bytes"], f"0x{s['address']:08x}"] for name, s in res.sections.items()]
    symbols = sorted(res.symbols.items(), key=lambda kv: -kv[1])[:30]
    calls = [[i, o["op"], o["name"], o["kernel"], o["instructions"], round(o["cycles"])] for i, o in enumerate(res.ops)]
    verdict = "byte-identical to" if res.identical else "DIFFERENT from"
    facts = [["device", res.device], ["outputs", f"{verdict} micronn's interpreter"],
             ["flash (code + constants + initial data)", res.flash_bytes],
             ["RAM (data + arena + stack)", res.ram_bytes],
             ["of which the arena", proj.arena_bytes], ["of which the stack (measured)", res.stack_bytes],
             ["instructions per inference", res.instructions], ["estimated cycles", round(res.cycles or 0)]]
    style = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#eee}"
             "td:first-child{text-align:left}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(proj.prefix)} firmware</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(proj.prefix)}: firmware for "
            f"{html.escape(proj.target)}</h1>{_table(facts, ['', ''])}<h2>Sections</h2>"
            f"{_table(sections, ['section', 'bytes', 'address'])}<h2>Largest symbols</h2>"
            f"{_table([[k, v] for k, v in symbols], ['symbol', 'bytes'])}<h2>Kernel calls</h2>"
            f"{_table(calls, ['call', 'operator', 'op', 'kernel', 'instructions', 'cycles'])}</body></html>")
