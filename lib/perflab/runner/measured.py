"""The measured commands of a sample: one wave per phase and command, each wave on every host of its role at once.

A campaign's ``phases`` run the tool's measured commands again, in order, with the
parameters each phase sets; a role that several hosts play (``hosts: {client: [h1, h3]}``)
runs its command on all of them at the same time, each with the parameters its host sets.
The tool's services (e.g. one ``iperf3 -s`` per client port) are those every such variant
needs, each started once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import tools
from ..hosts.remote import Host, Result
from ..campaign import Campaign
from ..tools.base import Command
from .plan import sample_timeout
from .session import Want, address_of, addresses


@dataclass(frozen=True)
class Measured(Command):
    """A measured command as a sample runs it: on inventory host ``host``, in ``phase``, with tool ``params``."""

    host: str = ""
    phase: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


def build(spec: Campaign, tool: tools.Tool, hosts: Mapping[str, Host],
          levels: Mapping[str, Any]) -> tuple[list[list[Measured]], list[Want]]:
    """The waves of a cell's samples in order, and the tool's services they need (each once, in order).

    A wave is one measured command of one phase, on every host of its role: the runner
    starts them together and waits for all before the next wave.
    """
    path = addresses(spec, hosts, levels)
    role, seats = next(iter(spec.concurrent.items()), (None, ()))
    waves: list[list[Measured]] = []
    services: dict[tuple[str, str], Want] = {}
    for phase, params in spec.phase_params(levels):
        # (parameters, addresses, host) of each concurrent seat (seats only come with a role), else of the one
        # command (its host is then its role's, not taken from here)
        variants: list[tuple[dict[str, Any], dict[str, str], str]] = [
            ({**params, **seat.set}, {**path, role: address_of(spec, hosts, role, seat.host, levels)}, seat.host)
            for seat in seats if role is not None] or [(params, path, "")]
        built = [tool.commands(p, a) for p, a, _ in variants]
        for (p, a, _), commands in zip(variants, built):
            for c in commands:
                if c.service and (spec.hosts[c.role], c.line()) not in services:
                    name = f"{tool.name}-{c.role}"
                    taken = sum(w.host == spec.hosts[c.role] and w.name.startswith(name) for w in services.values())
                    services[spec.hosts[c.role], c.line()] = Want(
                        spec.hosts[c.role], name + (f"-{taken + 1}" if taken else ""), c.line(), tool.ready(p, a))
        for i, c in enumerate(built[0]):
            if c.service:
                continue
            if c.role == role:
                waves.append([Measured(commands[i].role, commands[i].argv, host=host, phase=phase, params=p)
                              for (p, _, host), commands in zip(variants, built)])
            else:
                waves.append([Measured(c.role, c.argv, host=spec.hosts[c.role], phase=phase, params=variants[0][0])])
    return waves, list(services.values())


def run_waves(spec: Campaign, hosts: Mapping[str, Host],
              waves: list[list[Measured]]) -> tuple[list[tuple[Measured, Host, Result]], str]:
    """Run the waves in order; return every (command, host, result) and the reason of the first failure ("" if none).

    A failed wave (a non-zero exit or a timeout on any of its hosts) ends the sample: later
    waves do not run. Each command has the sample's timeout (``timeout`` or the tool's estimate).
    """
    results: list[tuple[Measured, Host, Result]] = []
    for wave in waves:
        done = _together(spec, hosts, wave)
        results += done
        reason = next(filter(None, (_failure(spec, m, host, res) for m, host, res in done)), "")
        if reason:
            return results, reason
    return results, ""


def _together(spec: Campaign, hosts: Mapping[str, Host], wave: list[Measured]) -> list[tuple[Measured, Host, Result]]:
    """Run a wave's commands at the same time, one thread per host, released together; wait for all."""
    if len(wave) == 1:
        m = wave[0]
        return [(m, hosts[m.host], hosts[m.host].run(m.line(), timeout=sample_timeout(spec, m.params),
                                                       max_output=spec.max_output))]
    out: list[Result | None] = [None] * len(wave)
    errors: list[BaseException] = []
    start = threading.Barrier(len(wave))

    def one(k: int, m: Measured) -> None:
        start.wait()
        try:
            out[k] = hosts[m.host].run(m.line(), timeout=sample_timeout(spec, m.params), max_output=spec.max_output)
        except Exception as exc:  # a lost host: raised again in the caller's thread once all have ended
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(k, m), name=f"measure-{m.host}", daemon=True)
               for k, m in enumerate(wave)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [(m, hosts[m.host], res) for m, res in zip(wave, out) if res is not None]


def _failure(spec: Campaign, m: Measured, host: Host, res: Result) -> str:
    """Why a measured command failed, naming the host (and the phase), or ""."""
    where = f"{host.name}{f' (phase {m.phase})' if m.phase else ''}"
    if res.cut:
        return (f"{res.cut} of the command on {where} exceeded the campaign's max_output of {spec.max_output} bytes "
                f"({len(res.out) + res.out.dropped} and {len(res.err) + res.err.dropped} bytes written); the first "
                f"{spec.max_output} bytes are kept: raise max_output or make the tool write less")
    if res.timed_out:
        return f"timed out after {sample_timeout(spec, m.params):g} s on {where}"
    if not res.ok:
        said = res.stderr.strip()[:200]
        return f"exit code {res.exit_code} on {where}" + (f": {said}" if said else "")
    return ""
