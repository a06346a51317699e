"""Run directories, the resumable sample runner, progress display and DataFrames of runs.

>>> from toolmend.runs import RunDir, Manifest, SampleRecord, run_samples, load_run

See :mod:`toolmend.runs._runner` for a complete example.
"""

from toolmend.runs._frame import LoadedRun, load_run, runs_dataframe
from toolmend.runs._manifest import DatasetInfo, Manifest, dataset_fingerprint, git_revision
from toolmend.runs._progress import NoProgress, PlainProgress, Progress, RichProgress, make_progress
from toolmend.runs._record import InfraError, SampleRecord
from toolmend.runs._runner import Aggregate, RunSummary, Solve, run_samples, summarize
from toolmend.runs._store import RecordWriter, RunDir

__all__ = [
    "Aggregate",
    "DatasetInfo",
    "InfraError",
    "LoadedRun",
    "Manifest",
    "NoProgress",
    "PlainProgress",
    "Progress",
    "RecordWriter",
    "RichProgress",
    "RunDir",
    "RunSummary",
    "SampleRecord",
    "Solve",
    "dataset_fingerprint",
    "git_revision",
    "load_run",
    "make_progress",
    "run_samples",
    "runs_dataframe",
    "summarize",
]
