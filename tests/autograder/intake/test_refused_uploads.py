"""Issue 36, finding 3: one student's bad zip never stops ``collect`` for the class.

A zip a student handed in that cannot be read (a bad CRC, the encrypted flag, an unknown
compression method, a file and a folder of the same name, a member name no file system
takes, a truncated zip, random bytes named ``.zip``, bytes flipped anywhere in a zip, a
nested zip bomb within the caps) is refused alone: it is kept in ``_unmatched/`` with
the reason (terminal, escaped, and ``_collect_report.csv``), every other upload is
placed, and ``collect`` exits 0, as it does for any file it does not place. Every route
(Canvas, Moodle, Gradescope, folders) through ``python -m autograder collect``; and a
member of the download itself that cannot be extracted is refused alone too.
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lms import canvas, gradescope, moodle
from lms.commands import NB, report, rows, run, tag_of

DOWNLOADED = datetime(2026, 10, 4, 9, 0, tzinfo=timezone.utc)
HONEST = {4711: "jane", 4712: "bob"}          # user id -> the tag of their notebook


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
                       "tag": tag}).encode()


def zipped(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def good(tag: str) -> bytes:
    return zipped({f"hw/{NB}.ipynb": nb(tag)})


def _headers(data: bytearray) -> list[int]:
    """Offsets of every local and central header of a zip."""
    out, at = [], 0
    while (at := data.find(b"PK", at)) >= 0:
        if data[at + 2:at + 4] in (b"\x03\x04", b"\x01\x02"):
            out.append(at)
        at += 2
    return out


def _patched(data: bytes, local: int, central: int, patch) -> bytes:
    """``data`` with ``patch(buf, offset)`` applied to the field at ``local`` bytes into
    every local header and ``central`` bytes into every central one."""
    buf = bytearray(data)
    for at in _headers(buf):
        patch(buf, at + (local if buf[at + 2] == 3 else central))
    return bytes(buf)


def bad_crc(tag: str) -> bytes:
    def flip(buf, at):
        buf[at] ^= 0xFF
    return _patched(good(tag), 14, 16, flip)


def encrypted(tag: str) -> bytes:
    def flag(buf, at):
        buf[at] |= 0x01
    return _patched(good(tag), 6, 8, flag)


def unknown_method(tag: str) -> bytes:
    def method(buf, at):
        buf[at:at + 2] = (99).to_bytes(2, "little")
    return _patched(good(tag), 8, 10, method)


def file_and_folder(tag: str) -> bytes:
    return zipped({"hw": b"a file", f"hw/{NB}.ipynb": nb(tag)})


def long_name(tag: str) -> bytes:
    return zipped({"x" * 300 + ".ipynb": nb(tag), f"{NB}.ipynb": nb(tag)})


def truncated(tag: str) -> bytes:
    data = good(tag)
    return data[:len(data) * 2 // 3]


def random_bytes(tag: str) -> bytes:
    return random.Random(tag).randbytes(4000)


def random_with_an_end_record(tag: str) -> bytes:
    """Random bytes ending in an end-of-central-directory record: ``is_zipfile`` says yes."""
    rnd = random.Random(tag)
    return rnd.randbytes(3000) + b"PK\x05\x06" + bytes(4) + (3).to_bytes(2, "little") * 2 \
        + (46 * 3).to_bytes(4, "little") + (100).to_bytes(4, "little") + bytes(2)


def nested_bomb(tag: str) -> bytes:
    """A zip of zips, each within the caps (a layered bomb): only one level is opened."""
    layer = zipped({"zeros.bin": bytes(900 * 1024)})
    for _ in range(3):
        layer = zipped({f"{i}.zip": layer for i in range(8)})
    return zipped({"bomb.zip": layer, f"{NB}.ipynb": nb(tag)})


NAMED = [bad_crc, encrypted, unknown_method, file_and_folder, long_name, truncated,
         random_bytes, random_with_an_end_record]


def flipped(seed: int) -> bytes:
    """A zip with a few bytes changed at random places (generated variants)."""
    rnd = random.Random(seed)
    buf = bytearray(zipped({f"hw/{NB}.ipynb": nb(f"flip-{seed}"), "hw/notes.txt": b"x" * 200}))
    for _ in range(rnd.randint(1, 4)):
        buf[rnd.randrange(len(buf))] = rnd.randrange(256)
    return bytes(buf)


def assert_refused_alone(done, out: Path, evil: dict[str, str]) -> None:
    """The honest students are placed, and each evil upload (origin -> student id) is
    either placed with its own notebook (the damage did not matter) or kept in
    _unmatched with the reason, said on the terminal too. Nothing is lost."""
    assert done.returncode == 0, done.stderr
    for uid, tag in HONEST.items():
        assert tag_of(out / str(uid) / NB / f"{NB}.ipynb") == tag
    found = report(out)
    for origin, sid in evil.items():
        row = found[origin]
        assert row["status"] in ("unmatched", "placed") or row["reason"], row
        if row["reason"].startswith("not unpacked: "):
            assert row["status"] == "unmatched" and (out / row["where"]).is_file(), row
            shown = done.stdout.split(f"  {origin}: ", 1)
            assert len(shown) == 2 and shown[1].startswith("not unpacked: "), origin
    for row in found.values():
        assert row["status"] == "warning" or (out / row["where"]).is_file(), row
    assert "Traceback" not in done.stderr


def canvas_class(bad: dict[int, bytes]) -> list[canvas.Student]:
    students = [canvas.Student(uid, f"Honest, {tag}", [(f"{NB}.ipynb", nb(tag))])
                for uid, tag in HONEST.items()]
    return students + [canvas.Student(uid, "Evil, Eve", [("hw.zip", data)])
                       for uid, data in bad.items()]


def test_each_kind_of_bad_zip_is_refused_alone_on_canvas(tmp_path):
    """The five kinds of the finding and three more, one student each, in one Canvas
    download: each is refused with its own reason, the others are placed."""
    bad = {5000 + i: make(f"evil-{i}") for i, make in enumerate(NAMED)}
    download = canvas.download(tmp_path / "canvas.zip", canvas_class(bad), DOWNLOADED)
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    evil = {f"evileve_{uid}_{900003 + i}_hw.zip": str(uid) for i, uid in enumerate(bad)}
    assert_refused_alone(done, out, evil)
    reasons = {origin: report(out)[origin]["reason"] for origin in evil}
    expected = ["Bad CRC-32", "encrypted", "method 99", "a file and a folder of the same name",
                "longer than the 255", "not a zip file that can be read",
                "not a zip file that can be read", "not unpacked: "]
    for (origin, why), words in zip(sorted(reasons.items()), expected):
        assert why.startswith("not unpacked: ") and words in why, (origin, why)
    assert not any((out / str(uid)).exists() for uid in bad)


def test_generated_damaged_zips_never_stop_collect(tmp_path):
    """Thirty zips with bytes flipped at random places, one per student: whatever each
    damage does, collect finishes, the honest students are placed, and every flipped zip
    is either read (its notebook placed as it is) or refused with a reason."""
    bad = {6000 + seed: flipped(seed) for seed in range(30)}
    download = canvas.download(tmp_path / "canvas.zip", canvas_class(bad), DOWNLOADED)
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    evil = {f"evileve_{uid}_{900003 + i}_hw.zip": str(uid) for i, uid in enumerate(bad)}
    assert_refused_alone(done, out, evil)
    for i, uid in enumerate(bad):
        placed = out / str(uid) / NB / f"{NB}.ipynb"
        if placed.exists():                 # read without complaint: exactly the notebook
            assert placed.read_bytes() == nb(f"flip-{uid - 6000}"), uid
    assert any(r["reason"].startswith("not unpacked: ") for r in report(out).values())


def test_a_nested_zip_bomb_within_the_caps_is_not_opened(tmp_path):
    bomb = nested_bomb("eve")
    assert len(bomb) < 200 * 1024 ** 2
    download = canvas.download(tmp_path / "canvas.zip", canvas_class({5000: bomb}), DOWNLOADED)
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    assert_refused_alone(done, out, {})
    assert tag_of(out / "5000" / NB / f"{NB}.ipynb") == "eve"      # her notebook is read
    inner = report(out)["evileve_5000_900003_hw.zip!bomb.zip"]
    assert inner["status"] == "unmatched" and "not unpacked (one level" in inner["reason"]
    assert not list(out.rglob("zeros.bin"))


@pytest.mark.parametrize("route", ["moodle", "gradescope", "folders"])
def test_a_bad_zip_is_refused_alone_on_every_route(tmp_path, route):
    """The same bad zips handed in through Moodle, Gradescope and a folder layout."""
    bad = {5000 + i: make(f"evil-{i}") for i, make in enumerate(NAMED[:5])}
    download = tmp_path / "download"
    if route == "moodle":
        students = [moodle.Student(uid, f"Honest {tag}", [(f"{NB}.ipynb", nb(tag))])
                    for uid, tag in HONEST.items()]
        students += [moodle.Student(uid, "Eve Evil", [("hw.zip", d)]) for uid, d in bad.items()]
        download = moodle.download(tmp_path / "moodle.zip", students, DOWNLOADED)
        evil = {f"Eve Evil_{uid}_assignsubmission_file/hw.zip": str(uid) for uid in bad}
    elif route == "gradescope":
        at = DOWNLOADED - timedelta(days=3)
        subs = [gradescope.Submission(uid, [gradescope.Submitter(tag, f"{tag}@uni.edu",
                                                                 str(uid))], at,
                                      [(f"{NB}.ipynb", nb(tag))])
                for uid, tag in HONEST.items()]
        subs += [gradescope.Submission(uid, [gradescope.Submitter("Eve", f"e{uid}@uni.edu",
                                                                  str(uid))], at,
                                       [("hw.zip", d)]) for uid, d in bad.items()]
        download = gradescope.download(tmp_path / "gs.zip", subs, DOWNLOADED)
        evil = {f"assignment_77_export/submission_{uid}/hw.zip": str(uid) for uid in bad}
    else:
        for uid, tag in HONEST.items():
            (download / str(uid) / NB).mkdir(parents=True)
            (download / str(uid) / NB / f"{NB}.ipynb").write_bytes(nb(tag))
        for uid, data in bad.items():
            (download / str(uid)).mkdir(parents=True)
            (download / str(uid) / "hw.zip").write_bytes(data)
        evil = {f"{uid}/hw.zip": str(uid) for uid in bad}
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    assert_refused_alone(done, out, evil)
    assert all(report(out)[o]["reason"].startswith("not unpacked: ") for o in evil)


def test_names_inside_a_refused_zip_are_escaped_on_the_terminal_and_inert_in_the_report(
        tmp_path):
    evil_name = "=HYPERLINK(\"x\")\x1b]0;pwned\x07\x1b[2J"
    data = zipped({evil_name: b"x", f"{evil_name}/{NB}.ipynb": nb("e")})
    download = canvas.download(tmp_path / "canvas.zip", canvas_class({5000: data}), DOWNLOADED)
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    assert_refused_alone(done, out, {"evileve_5000_900003_hw.zip": "5000"})
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\x1b]0;pwned\\x07" in done.stdout
    cells = [c for r in rows(out / "_collect_report.csv") for c in r.values()]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@") or "\x1b" in c], cells


def test_a_member_of_the_download_that_cannot_be_extracted_is_refused_alone(tmp_path):
    """A file whose name Canvas lengthens past what a file system takes (the student's
    own display name is long) is refused alone: the rest of the download is placed."""
    students = canvas_class({})
    students.append(canvas.Student(5000, "Evil, Eve", [("y" * 250 + ".ipynb", nb("e")),
                                                       (f"{NB}.ipynb", nb("eve"))]))
    download = canvas.download(tmp_path / "canvas.zip", students, DOWNLOADED)
    out = tmp_path / "subs"
    done = run("collect", download, "--out", out, tmp=tmp_path / "tmp", check=False)
    assert done.returncode == 0, done.stderr
    for uid, tag in {**HONEST, 5000: "eve"}.items():
        assert tag_of(out / str(uid) / NB / f"{NB}.ipynb") == tag
    [long_row] = [r for r in rows(out / "_collect_report.csv") if "yyyy" in r["source"]]
    assert long_row["status"] == "skipped" and "longer than the 255" in long_row["reason"]
    assert "file(s) not copied" in done.stdout and "longer than the 255" in done.stdout
