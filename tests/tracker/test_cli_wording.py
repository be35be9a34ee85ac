"""Summary wording of the CLI (issue #14 item 7): plurals and readable rates for small inputs."""

from tracker.cli_common import plural as _plural
from tracker.cli_common import rate_text as _rate_text


def test_counts_are_pluralised_in_english() -> None:
    assert _plural(1, "error") == "1 error"
    assert _plural(0, "error") == "0 errors"
    assert _plural(2, "suspect") == "2 suspects"


def test_small_rates_are_not_shown_as_zero_millions() -> None:
    assert _rate_text(1234.0) == "1.2 k chars/s"
    assert _rate_text(56.0) == "56 chars/s"
    assert _rate_text(2_500_000.0) == "2.50 M chars/s"
