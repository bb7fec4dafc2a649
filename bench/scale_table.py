"""How bench.scale's figures read: a size's one-line summary, the table of both sizes and the
targets they are held to."""

from __future__ import annotations

from typing import Any


def summary_of(name: str, size: dict[str, Any]) -> str:
    m, s, r = size["memory"], size["search"], size["restart"]
    return (
        f"{name}: {m['notes']} notes, {m['sections']} sections, index {size['index_on_disk_mb']} MB on disk; "
        f"whole daemon idle {m['whole_daemon_mb']} MB{_anon(m)}; "
        f"search socket p50 {s['p50_ms']} ms, max {s['max_ms']} ms, "
        f"process median {s['process']['wall_ms']['median']} ms "
        f"(max {s['process']['wall_ms']['max']}){_bare(s)}; "
        f"restart: status answers at {r['status_answers_s']} s, serving at {r['serving_s']} s "
        f"(steps {r['loading_steps_s']}), first search answered {r['first_search_answered_s']} s, "
        f"reconciled {r['reconciled_s']} s{_filtered(size)}"
    )


def _filtered(size: dict[str, Any]) -> str:
    medians = size.get("filtered_search")
    if not medians:
        return ""
    return (
        f"; filtered by --path, socket median: none {medians['unfiltered_ms']} ms, one copy "
        f"{medians['one_copy_ms']} ms, every copy {medians['every_copy_ms']} ms"
    )


# The large-vault targets (issue #35), each checked against the Nx figures.
TARGETS = (
    ("whole daemon idle per section at Nx (all it holds / sections)", "whole_kb_per_section", 3.0, "KB"),
    ("whole daemon idle at 1x", "one_whole_mb", 500.0, "MB"),
    ("whole daemon per section added (slope 1x to Nx, restarted)", "slope_kb_per_section", 3.0, "KB"),
    ("`status` answers after a restart", "status_answers_s", 1.0, "s"),
    ("a restarted daemon serves searches", "serving_s", 10.0, "s"),
    ("a search sent during a reopen waits", "search_waited_s", 1.0, "s"),
    ("whole `mdrag search` process, median", "process_median_ms", 150.0, "ms"),
    ("whole `mdrag search` process, max", "process_max_ms", 1000.0, "ms"),
    ("socket search p50", "p50_ms", 60.0, "ms"),
)


def _row(name: str, size: dict[str, Any]) -> str:
    m, s, r = size.get("after_restart", size["memory"]), size["search"], size["restart"]
    return (
        f"| {name} | {m['notes']:,} | {m['sections']:,} | {size['index_on_disk_mb']:,.0f} MB | "
        f"{m['whole_daemon_mb']:,.0f} MB{_anon(m)} | {s['p50_ms']} / {s['max_ms']} ms | "
        f"{s['process']['wall_ms']['median']:.0f} / {s['process']['wall_ms']['max']:.0f} ms{_bare(s)} | "
        f"{r['status_answers_s']} s | {r['serving_s']} s | {r['reconciled_s']} s |"
    )


def _anon(memory: dict[str, Any]) -> str:
    """' (1,180 MB of it heap)': the part of the resident memory no file backs (the rest is mapped
    files, such as the keyword index, which the kernel may drop); empty for a run without it."""
    anon = memory.get("whole_daemon_anon_mb")
    return f" ({anon:,.0f} MB of it heap)" if anon is not None else ""


def _bare(search: dict[str, Any]) -> str:
    """' (bare python 31 ms)': the interpreter's own start beside those processes (the machine's
    state then); empty for a run that did not time it."""
    bare = search["process"].get("bare_python_ms")
    return f" (bare python {bare['median']:.0f} ms)" if bare else ""


def figures(result: dict[str, Any]) -> dict[str, float | None]:
    """The Nx figures the targets name, flat."""
    many = result["many"]
    reopen = result.get("reopen") or {}
    held = many.get("after_restart", many["memory"])
    return {
        "whole_kb_per_section": round(held["whole_daemon_mb"] * 1024 / held["sections"], 2),
        "one_whole_mb": result["one"]["memory"]["whole_daemon_mb"],
        "slope_kb_per_section": result.get("slope_kb_per_section"),
        "status_answers_s": many["restart"]["status_answers_s"],
        "serving_s": many["restart"]["serving_s"],
        "search_waited_s": reopen.get("search_waited_s"),
        "process_median_ms": many["search"]["process"]["wall_ms"]["median"],
        "process_max_ms": many["search"]["process"]["wall_ms"]["max"],
        "p50_ms": many["search"]["p50_ms"],
    }


def reopen_sentence(reopen: dict[str, Any]) -> str:
    said = (
        f"The daemon reopened the grown index by itself ({reopen['rows_written']:,} rows written) "
        f"in {reopen['seconds']} s"
    )
    if "searches_during" not in reopen:  # a run before reopens loaded beside the running servers
        return f"{said}; a search sent as it began waited {reopen['search_waited_s']} s."
    return (
        f"{said}; {reopen['searches_during']} searches sent meanwhile waited "
        f"{reopen['search_waited_median_s']} s (median), {reopen['search_waited_s']} s at most "
        f"(requests held back {reopen['requests_held_s']} s in all for the switches); the whole "
        f"daemon peaked at {reopen['peak_whole_daemon_mb']:,} MB "
        "(each shard's new server loads beside the old one)."
    )


def table(result: dict[str, Any]) -> str:
    """The sizes side by side, then each target with its Nx figure (for docs/benchmarks.md)."""
    lines = [
        "| size | notes | sections | index on disk | whole daemon idle after a start | socket search "
        "p50 / max | whole `mdrag search` median / max | restart: `status` answers | restart: "
        "serving | restart: reconciled |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    if "one" in result:
        lines.append(_row("1x", result["one"]))
    lines.append(_row(f"{result['factor']}x", result["many"]))
    steps = result["many"]["restart"]["loading_steps_s"]
    lines += [
        "",
        f"The {result['factor']}x restart, each step's first sighting by `status` (seconds "
        "from the start): " + ", ".join(f"{k} {v}" for k, v in steps.items()) + ".",
    ]
    if "note" in result.get("one", {}):
        lines.append(f"The 1x figures: {result['one']['note']}.")
    reopen = result.get("reopen")
    if not reopen:
        lines.append(
            "The daemon did not reopen the grown index within the wait (not due: it reopens once a "
            "fifth of the index was written since it opened), so no search met a reopen this run."
        )
    else:
        lines.append(reopen_sentence(reopen))
    lines += ["", "| target | measured | goal | met |", "| --- | ---: | ---: | --- |"]
    found = figures(result)
    for name, key, goal, unit in TARGETS:
        value = found[key]
        shown = "-" if value is None else f"{value} {unit}"
        met = "-" if value is None else ("yes" if value <= goal else "no")
        lines.append(f"| {name} | {shown} | ≤ {goal:g} {unit} | {met} |")
    return "\n".join(lines)
