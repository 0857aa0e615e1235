"""``python -m autograder serve``: the JupyterHub service's command (see
docs/jupyterhub/jupyterhub_config.py for how the hub starts it)."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import threading
import urllib.parse
from pathlib import Path

from . import settings as defaults


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="the JupyterHub service `grader`: grade on submit",
                       description="Grade each notebook a student hands in (nbgrader's "
                                   "exchange or the form at /services/grader/) into OUT.")
    p.add_argument("--submissions", required=True, type=Path,
                   help="folder where the service keeps what students handed in")
    p.add_argument("--out", required=True, type=Path, help="the course's OUT folder")
    p.add_argument("--inbound", type=Path,
                   help="nbgrader's EXCHANGE/COURSE/inbound folder, watched for submissions")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="notebooks graded at once (default: one per core, %(default)s)")
    p.add_argument("--max-bytes", type=int, default=defaults.DEFAULT_MAX_BYTES,
                   help="largest notebook taken, in bytes (default: %(default)s)")
    p.add_argument("--rate", default=f"{defaults.DEFAULT_RATE_COUNT}/"
                                     f"{defaults.DEFAULT_RATE_WINDOW:g}", metavar="N/SECONDS",
                   help="submissions a student may make per window (default: %(default)s)")
    p.add_argument("--backend", choices=defaults.BACKENDS, default="local",
                   help="where each grading job runs (default: %(default)s)")
    p.add_argument("--cluster-option", action="append", default=[],
                   help="an sbatch option (slurm), or the image then the volume claim "
                        "(kubernetes); repeatable")
    p.add_argument("--grade-args", default="",
                   help="more `grade` options for every job, e.g. \"--credit cases\"")
    p.add_argument("--instructor", action="append", default=[],
                   help="a hub user who may release hidden results (the hub's admins may)")
    p.add_argument("--after-grading", action="append", default=[], metavar="MODULE:NAME",
                   help="a callable given each graded record (e.g. LMS grade passback)")
    p.add_argument("--extra-routes", action="append", default=[], metavar="MODULE:NAME",
                   help="a callable(service) returning more tornado routes under the prefix")
    p.set_defaults(func=cmd_serve)


def load_object(spec: str):
    module, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"{spec!r}: give MODULE:NAME")
    return getattr(importlib.import_module(module), name)


def parse_rate(text: str) -> tuple[int, float]:
    try:
        count, window = text.split("/")
        return int(count), float(window)
    except ValueError:
        raise ValueError(f"--rate takes N/SECONDS (e.g. 5/600), not {text!r}") from None


def settings_of(args) -> defaults.Settings:
    count, window = parse_rate(args.rate)
    return defaults.Settings(
        submissions=args.submissions.resolve(), out=args.out.resolve(),
        inbound=args.inbound.resolve() if args.inbound else None, workers=args.workers,
        max_bytes=args.max_bytes, rate_count=count, rate_window=window,
        backend=args.backend, grade_options=tuple(shlex.split(args.grade_args)),
        instructors=frozenset(args.instructor), cluster_options=tuple(args.cluster_option),
        after_grading=tuple(load_object(s) for s in args.after_grading))


def cmd_serve(args) -> int:
    from tornado import ioloop

    from .service import GradingService
    from .web import make_app, max_body_size

    logging.basicConfig(level=logging.INFO)
    service = GradingService(settings_of(args))
    extra = [route for spec in args.extra_routes for route in load_object(spec)(service)]
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/grader/")
    url = urllib.parse.urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL",
                                               "http://127.0.0.1:10101"))
    app = make_app(service, prefix, extra)
    app.listen(url.port, url.hostname, max_body_size=max_body_size(service))
    if service.settings.inbound is not None:
        threading.Thread(target=service.watch, daemon=True, name="exchange").start()
    try:
        ioloop.IOLoop.current().start()
    finally:
        service.stop()
    return 0
