"""Join the outputs of several grading runs (``grade --shard I/N`` on several machines).

Each output folder's ``results.jsonl`` holds one record per graded notebook; merging
concatenates them and writes grades.csv, summary.csv and the feedback pages afresh, so a
merged folder is exactly what one run over the whole class would have written. The same
(student, assignment, notebook) in two inputs is an error unless both records agree,
because it means the shards overlapped (or a folder was passed twice). The written answers
scored by hand in any input (``manual_scores.json``) are joined too, so that a later
``grade --student`` into the merged folder keeps them; one answer scored differently in
two inputs is an error.
"""

from __future__ import annotations

from pathlib import Path

import json

from autograder.results.outputs import write_outputs
from autograder.results.records import MANUAL, credit_of, provenance, read_manual, read_records, sort_key


class MergeConflict(ValueError):
    pass


def _comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "seconds"}


def merge(inputs: list[Path], out: Path, allow_mixed: bool = False) -> list[dict]:
    """Merge the grading outputs ``inputs`` into ``out``; return the merged records.
    :class:`MergeConflict` when they were graded with different ``solutions/``, grader
    versions or grading secrets (each record says which), unless ``allow_mixed``; and,
    always, when they were graded with different ``grade --credit`` settings."""
    manual = _merged_manual(inputs + [out])   # first: its conflicts say what differs
    merged: dict[tuple, tuple[dict, Path]] = {}
    seen: dict[tuple[str, str], Path] = {}
    credits: dict[str, Path] = {}
    for folder in inputs:
        records = read_records(folder)
        for credit in sorted({credit_of(r) for r in records}):
            credits.setdefault(credit, folder)
        if len(credits) > 1:          # never merged: --allow-mixed is about versions
            (a, fa), (b, fb) = list(credits.items())[:2]
            raise MergeConflict(
                f"{fa} was graded with --credit {a} and {fb} with --credit {b}: a test "
                f"cell's points would mean all or nothing for some students and a fraction "
                f"of case groups for others; regrade one of them with the other's --credit")
        for stamp in provenance(records):
            seen.setdefault(stamp, folder)
        if len(seen) > 1 and not allow_mixed:
            (a, fa), (b, fb) = list(seen.items())[:2]
            if a[:2] == b[:2]:
                raise MergeConflict(
                    f"{fa} and {fb} were graded with different grading secrets (key ids "
                    f"{a[2] or 'none'} and {b[2] or 'none'}): their students' hidden inputs "
                    f"come from different secrets. Grade every shard with the same "
                    f"--secret-file, or pass --allow-mixed to merge anyway")
            raise MergeConflict(
                f"{fa} was graded with solutions {a[0]} (grader {a[1]}) and {fb} with "
                f"solutions {b[0]} (grader {b[1]}): regrade one of them, or pass "
                f"--allow-mixed to merge anyway")
        for record in records:
            key = sort_key(record)
            if key in merged:
                other, where = merged[key]
                if _comparable(other) != _comparable(record):
                    raise MergeConflict(
                        f"{'/'.join(key)} was graded in both {where} and {folder} with different"
                        " results: were the shards overlapping? (to regrade some students,"
                        " run `grade SUBMISSIONS --out OUT --student ID ...` into the one OUT"
                        " instead of merging)")
                continue
            merged[key] = (record, folder)
    records = [record for record, _ in merged.values()]
    if manual:      # hand-given scores travel with the merged folder (a later grade keeps them)
        out.mkdir(parents=True, exist_ok=True)
        (out / MANUAL).write_text(json.dumps(manual, indent=1, sort_keys=True),
                                  encoding="utf-8")
    write_outputs(records, out)
    return sorted(records, key=sort_key)


def _merged_manual(folders: list[Path]) -> dict:
    """The hand-given scores of every folder (``manual_scores.json``); the same written
    answer scored differently in two of them is a :class:`MergeConflict`."""
    manual: dict[str, tuple[dict, Path]] = {}
    for folder in folders:
        for key, given in read_manual(folder).items():
            if key in manual and manual[key][0] != given:
                raise MergeConflict(f"{'/'.join(json.loads(key))} was scored by hand "
                                    f"differently in {manual[key][1]} and {folder}")
            manual.setdefault(key, (given, folder))
    return {key: given for key, (given, _) in manual.items()}
