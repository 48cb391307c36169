"""The notice a session's next block shows after its process restarted or
was rewound: why, what came back from the snapshot and what did not."""


def _names(names, limit=12):
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", +{len(names) - limit} more"


# How much of what restoring printed the notice shows.
OUTPUT_LINES = 6
OUTPUT_WIDTH = 200


def output_lines(text, more=0):
    """The first OUTPUT_LINES lines of text, each cut to OUTPUT_WIDTH
    characters, then how many more there were (more: lines past text)."""
    rows = text.rstrip("\n").splitlines()
    out = [r if len(r) <= OUTPUT_WIDTH else r[:OUTPUT_WIDTH - 1] + "…" for r in rows[:OUTPUT_LINES]]
    more += max(len(rows) - OUTPUT_LINES, 0)
    if more:
        out.append(f"… +{more} more lines")
    return out


def notice(reason, report, output="", more_lines=0, rewound=False):
    """The "[Sandbox restarted]" text the next block's output starts with
    ("[Sandbox rewound]" after a rewind); output is what restoring printed
    (stdout and stderr, warnings too), more_lines how many lines after it
    were not kept."""
    why = (reason or "the previous sandbox process stopped").strip().rstrip(".")
    lines = [f"[Sandbox {'rewound' if rewound else 'restarted'}] {why[:1].upper()}{why[1:]}."]
    if (report or {}).get("rewind_error"):
        lines.append(f"{report['rewind_error'].rstrip('.')}; the session's last snapshot comes back instead.")
    unsaved = (report or {}).get("unsaved")
    if unsaved:
        lines.append(_unsaved(unsaved))
    if output.strip():
        lines.append("Restoring printed:")
        lines.extend("  " + r for r in output_lines(output, more_lines))
    if not report or report.get("no_snapshot"):
        lines.append("There was no snapshot to restore.")
        return "\n".join(lines)
    if report.get("discarded"):
        lines.extend(_discarded(report))
        return "\n".join(lines)
    lines.extend(_restored(report))
    if rewound:
        lines.append(_files_not_rewound(report))
    if report.get("in_place"):
        lines.append(_in_place(report["in_place"]))
    return "\n".join(lines)


def _in_place(counts):
    """What a rewind in place (inplace.py) took from memory and what from
    the snapshot."""
    reused, read = counts["reused"], counts["read"]
    how = f"{reused} {'value' if reused == 1 else 'values'} from memory, unchanged"
    if read:
        how += f"; {read} read back from the snapshot"
    return f"Rewound in place, without a new process: {how}."


def _unsaved(unsaved):
    what = f" to {_names(unsaved['names'])}" if unsaved["names"] else ""
    first, last = unsaved["block"], unsaved.get("last", unsaved["block"])
    which = f"block {first}" if last == first else f"blocks {first} to {last}"
    return (f"The changes of {which}{what} were not saved: the process stopped after the "
            "block answered and before its snapshot was written.")


def _discarded(report):
    gone = report["discarded"].strip().rstrip(".")
    lines = [f"The snapshot was discarded: {gone}; the session starts empty."]
    if report.get("held"):
        lines.append(f"It held ({len(report['held'])}): {_names(report['held'])}.")
    elif report.get("unreadable"):
        lines.append(f"It could not be read: {report['unreadable']}.")
    return lines


def _restored(report):
    """What came back, what was left out, and what did not come back and why."""
    lines = []
    if report.get("error"):
        lines.append(f"Restoring failed: {report['error']}; the session starts without it.")
    kinds = [("functions", "helpers"), ("classes", "classes"), ("variables", "variables"), ("imports", "imports"),
             ("paths", "sys.path entries")]
    came = [f"{label} ({len(report[k])}): {_names(report[k])}" for k, label in kinds if report.get(k)]
    if came:
        lines.append("Restored " + "; ".join(came) + ".")
    elif not report.get("error"):
        lines.append("The snapshot was empty.")
    if report.get("dropped"):
        lines.append(f"Left out on request ({len(report['dropped'])}): {_names(report['dropped'])}.")
    if report.get("not_found"):
        lines.append(f"Not in the snapshot, so nothing to leave out: {_names(report['not_found'])}.")
    lost = report.get("lost") or {}
    if lost:
        items = sorted(lost.items())
        lines.append(f"Did not come back ({len(items)}):")
        for name, why in items[:12]:
            lines.append(f"  {name}: {why}")
        if len(items) > 12:
            lines.append(f"  +{len(items) - 12} more")
    ul = report.get("uses_lost") or {}
    if ul:
        rows = [f"{h} ({', '.join(v)})" for h, v in sorted(ul.items())]
        lines.append("Restored helpers that use a name that did not come back: " + _names(rows) + ".")
    return lines


def _files_not_rewound(report):
    files = (report or {}).get("rewound_files") or []
    wrote = ""
    if files:
        blocks = report.get("rewound_blocks") or []
        which = f"block {blocks[0]}" if len(blocks) == 1 else "the blocks rewound"
        wrote = f"; {which} wrote {_names(files)}"
    return f"Files are not rewound{wrote}: they stay as they are (a workspace under git is yours to restore)."
