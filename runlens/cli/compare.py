"""``runlens compare RUN BASELINE``: is RUN worse than BASELINE beyond run-to-run noise?

Exit status: 0 when no regression finding reaches ``--fail-on``, 1 when one
does, 2 for bad usage or a run that cannot be read.
"""

from __future__ import annotations

import sys

import click

from runlens.cli.common import color_option, fail_on_option, refuse_both, use_color, verbosity_options
from runlens.errors import UsageError


@click.command()
@click.argument("run")
@click.argument("baseline_arg", metavar="BASELINE", required=False)
@click.option("--baseline", "baseline_opt", metavar="BASELINE", help="the run to compare against "
              "(the same as the second argument)")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md", "html"]), default="text",
              show_default=True, help="text for a terminal, json, md (a PR comment) or html")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here instead of stdout")
@fail_on_option("regression")
@verbosity_options
@color_option
def compare(run: str, baseline_arg: str | None, baseline_opt: str | None, fmt: str, output: str | None,
            fail_on: str, color: str, quiet: bool = False, verbose: bool = False) -> None:
    """Compare the run RUN with the run BASELINE, aligned by step.

    Says where RUN is worse beyond run-to-run noise (final loss, validation
    loss, convergence speed, new NaNs, new spikes, gradient scale) and how
    the two configs differ.

    \b
    Examples:
      runlens compare runs/pr-123 runs/main
      runlens compare runs/pr-123 runs/main --format md -o comment.md
    """
    if baseline_arg and baseline_opt and baseline_arg != baseline_opt:
        raise UsageError(f"two baselines given ({baseline_arg} and --baseline {baseline_opt}); give one")
    baseline = baseline_arg or baseline_opt
    if not baseline:
        raise UsageError("compare needs a baseline: runlens compare RUN BASELINE")
    from runlens.compare import compare_runs
    from runlens.io.output import check_target, write_text
    from runlens.render.compare import RENDERERS, render_compare_text

    refuse_both(quiet, verbose)
    if output:
        check_target(output)
    result = compare_runs(run, baseline)
    if result.shared_steps == 0:
        raise UsageError(f"{run} and {baseline} share no logged training step: there is nothing to "
                         "compare (compare aligns the runs by step)")
    painted = fmt == "text" and not output and use_color(color)
    if fmt == "text":
        text = render_compare_text(result, color=painted, quiet=quiet, verbose=verbose)
    else:
        text = RENDERERS[fmt](result)
    if output:
        write_text(output, text)
        if not quiet:  # the file holds the comparison; the terminal gets what was found
            from runlens.render.compare import verdict_line

            click.echo(f"runlens: {verdict_line(result)}; written to {output}", err=True)
    else:
        click.echo(text, nl=False, color=painted or None)
    sys.exit(1 if result.reaches(fail_on) else 0)
