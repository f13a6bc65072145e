"""The tracer's stdlib reservation record is byte-equal to its model (issue 25).

``factory smoke`` writes the ``running`` record before pydantic is imported
(:func:`factory.bus.smoke_reserve.reservation_bytes`); the document's model stays
``SmokeReservation``. For every admitted request (texts are UTF-8 without lone
surrogates, sizes fit RFC 8785 integers) both give the same bytes; the twin shows the
comparison notices a difference in any one field.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from factory.bus.smoke_report import Artifact, SmokeReservation
from factory.bus.smoke_reserve import reservation_bytes

TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)
SIZE = st.integers(min_value=0, max_value=(1 << 53) - 1)
SHA = st.text("0123456789abcdef", min_size=64, max_size=64)


def _model(data_dir: str, artifact: dict[str, object], task: str) -> bytes:
    model = SmokeReservation(
        ok=False, data_dir=data_dir, artifact=Artifact.model_validate(artifact), task=task
    )
    return model.data()


@given(data_dir=TEXT, path=TEXT, size=SIZE, sha=SHA, task=TEXT)
def test_the_stdlib_reservation_is_the_models_bytes(
    data_dir: str, path: str, size: int, sha: str, task: str
) -> None:
    artifact: dict[str, object] = {"path": path, "bytes": size, "sha256": sha}
    assert reservation_bytes(data_dir, artifact, task) == _model(data_dir, artifact, task)


@given(data_dir=TEXT, path=TEXT, size=SIZE, sha=SHA, task=TEXT, field=st.sampled_from("dpbt"))
def test_negative_control_one_field_changed_changes_the_bytes(
    data_dir: str, path: str, size: int, sha: str, task: str, field: str
) -> None:
    artifact: dict[str, object] = {"path": path, "bytes": size, "sha256": sha}
    other = dict(artifact)
    other_dir, other_task = data_dir, task
    if field == "d":
        other_dir = data_dir + "x"
    elif field == "p":
        other["path"] = path + "x"
    elif field == "b":
        other["bytes"] = size ^ 1
    else:
        other_task = task + "x"
    assert reservation_bytes(other_dir, other, other_task) != _model(data_dir, artifact, task)
