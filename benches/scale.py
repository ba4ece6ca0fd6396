#!/usr/bin/env python3
"""cordon at scale against the platform's way: one throwaway container per probe.

For each size (client×provider pairs) this generates a compose stack of fixture
containers and its scenario, deploys it, then runs, interleaved and repeated:
  - cordon: the whole compose suite (suites/compose.yaml) against the stack;
  - baseline seq: the route, reach and session work done the way a platform's scripts
    do it, one `docker run --rm --network container:<client>` of the busybox image per
    probe, one after another;
  - baseline par8: the same probes, 8 at a time.
and prints wall times (median, min, max), cordon's peak RSS, the ratios and cordon's
marginal cost per pair. Everything it starts is torn down on every path.

Run through benches/scale.sh, which builds the images and the release binary first.
"""

import argparse
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# pairs -> (clients, providers)
SIZES = {12: (4, 3), 100: (10, 10), 200: (20, 10)}
PORT = 8000
LABEL = "cordon-test=1"


def admitted(client: int, provider: int) -> bool:
    """Each provider admits every other client: both admitted and refused pairs exist."""
    return (client + provider) % 2 == 0


def cid(i: int) -> str:
    return f"c{i:02d}"


def pid(j: int) -> str:
    return f"p{j:02d}"


# ---------------------------------------------------------------- the generated stack


class Stack:
    """A C×P stack: `p<j>` providers (fixture MCP servers, each alone on `net-p<j>`),
    `c<i>` clients (`cordon-fixture sleep`) on `dnsnet` and the networks of the providers
    that admit them, a wildcard DNS server (`*.bench.test`) as in the reference stack, and
    one disabled provider `gone` whose former consumer is c01."""

    def __init__(self, pairs: int, block: tuple[str, int], image: str, workdir: Path, run_id: str):
        self.pairs = pairs
        self.clients, self.providers = SIZES[pairs]
        self.block = block
        self.image = image
        self.dir = workdir / f"size-{pairs}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.project = f"cordon-bench-{pairs}-{run_id}"
        self.tokens = {f"P{j:02d}_TOKEN": secrets.token_hex(16) for j in range(1, self.providers + 1)}
        self.tokens["GONE_TOKEN"] = secrets.token_hex(16)
        self.env = dict(os.environ, **self.tokens)

    def provider_addr(self, j: int) -> str:
        return f"{self.net(j)}.10"

    def net(self, k: int) -> str:
        """The k-th /24 of this stack's block of 16 (k = 0: dnsnet, k = j: net-p<j>)."""
        first16, m = self.block
        return f"{first16}.{16 * m + k}"

    def containers(self) -> int:
        return self.clients + self.providers + 1

    def compose_doc(self) -> dict:
        hardened = {
            "image": self.image,
            "dns": ["127.0.0.1"],
            "user": "65534:65534",
            "read_only": True,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true"],
            "mem_limit": "64m",
            "cpus": 0.5,
            "pids_limit": 64,
            "labels": {"cordon-test": "1"},
        }
        dns_addr = f"{self.net(0)}.53"
        services = {
            "dns": dict(
                hardened,
                command=["dns", "--listen", "0.0.0.0:53", "--zone", "bench.test", "--wildcard", dns_addr],
                networks={"dnsnet": {"ipv4_address": dns_addr}},
            )
        }
        networks = {"dnsnet": {"ipam": {"config": [{"subnet": f"{self.net(0)}.0/24"}]}, "labels": {"cordon-test": "1"}}}
        for j in range(1, self.providers + 1):
            var = f"P{j:02d}_TOKEN"
            services[pid(j)] = dict(
                hardened,
                command=["mcp", "--listen", f"0.0.0.0:{PORT}", "--token-env", var, "--tools", "add,echo", "--name", pid(j)],
                environment={var: "${" + var + ":?}"},
                networks={f"net-{pid(j)}": {"ipv4_address": self.provider_addr(j)}},
            )
            networks[f"net-{pid(j)}"] = {
                "ipam": {"config": [{"subnet": f"{self.net(j)}.0/24"}]},
                "labels": {"cordon-test": "1"},
            }
        for i in range(1, self.clients + 1):
            nets = ["dnsnet"] + [f"net-{pid(j)}" for j in range(1, self.providers + 1) if admitted(i, j)]
            services[cid(i)] = dict(
                hardened, command=["sleep"], dns=[dns_addr], dns_search=["bench.test"], networks=nets
            )
        return {"version": "2.4", "services": services, "networks": networks}

    def scenario_doc(self) -> dict:
        credentials = {f"{pid(j)}-token": {"env": f"P{j:02d}_TOKEN"} for j in range(1, self.providers + 1)}
        credentials["gone-token"] = {"env": "GONE_TOKEN"}
        providers = {}
        for j in range(1, self.providers + 1):
            providers[pid(j)] = {
                "url": f"http://{pid(j)}:{PORT}/mcp",
                "credential": f"{pid(j)}-token",
                "allowed_consumers": [cid(i) for i in range(1, self.clients + 1) if admitted(i, j)],
                "tools": {"allowlist": ["add", "echo"]},
                "read": {"tool": "add", "arguments": {"a": 2, "b": 3}, "expect": {"json_subset": {"result": 5}}},
            }
        providers["gone"] = {
            "url": f"http://gone:{PORT}/mcp",
            "credential": "gone-token",
            "disabled": True,
            "allowed_consumers": [cid(1)],
            "networks": ["net-p01"],
            "tools": {"allowlist": []},
        }
        clients = {
            cid(i): {
                "credentials": {
                    pid(j): f"{pid(j)}-token" for j in range(1, self.providers + 1) if admitted(i, j)
                }
            }
            for i in range(1, self.clients + 1)
        }
        return {"name": f"bench-{self.pairs}", "project": self.project, "credentials": credentials,
                "providers": providers, "clients": clients}

    def write(self):
        # JSON is YAML: compose and cordon both read these files as written.
        (self.dir / "compose.yaml").write_text(json.dumps(self.compose_doc(), indent=1))
        (self.dir / "scenario.yaml").write_text(json.dumps(self.scenario_doc(), indent=1))

    def compose(self, *args, check=True):
        cmd = ["docker-compose", "-p", self.project, "-f", str(self.dir / "compose.yaml"), *args]
        out = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr}")
        return out

    def up(self):
        self.write()
        self.compose("up", "-d", "--no-build")

    def down(self):
        out = self.compose("down", "-v", "--remove-orphans", "-t", "1", check=False)
        if out.returncode == 0:
            return
        # Docker 20.10 may keep a stale endpoint for a moment: retry what compose left.
        label = f"label=com.docker.compose.project={self.project}"
        for _ in range(10):
            ids = subprocess.run(["docker", "network", "ls", "-q", "--filter", label],
                                 capture_output=True, text=True).stdout.split()
            if not ids:
                return
            for n in ids:
                subprocess.run(["docker", "network", "rm", n], capture_output=True)
            time.sleep(1)
        last = out.stderr.strip().splitlines()[-1:] or [""]
        print(f"warning: networks of {self.project} left behind: {last[0]}", file=sys.stderr)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"


# ---------------------------------------------------------------- the baseline


def probes(stack: Stack) -> list:
    """The platform's way: for every pair, the probes a script would run, each as
    (client service, shell script, expected exit code).
    route: the name resolves and its address accepts TCP (1 s timeout);
    session: initialize, tools/list and tools/call with the bearer (wget POSTs);
    reach: a non-admitted client's connect to the provider's address fails (1 s).
    busybox's nslookup tries the search list before the bare name (the wildcard would
    answer), so the script asks for the absolute name, as the clients' libc does with
    ndots:0."""
    out = []
    accept = "--header 'Accept: application/json, text/event-stream' --header 'Content-Type: application/json'"
    for i in range(1, stack.clients + 1):
        for j in range(1, stack.providers + 1):
            name, addr, var = pid(j), stack.provider_addr(j), f"P{j:02d}_TOKEN"
            url = f"http://{name}:{PORT}/mcp"
            if admitted(i, j):
                route = (
                    f"a=$(nslookup {name}. | awk '/^Name:/{{n=1}} n && /^Address/{{print $2; exit}}'); "
                    f"[ -n \"$a\" ] && nc -w 1 \"$a\" {PORT} </dev/null"
                )
                init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}'
                session = (
                    f"auth=\"Authorization: Bearer ${var}\"; "
                    f"sid=$(wget -S -q -O /dev/null {accept} --header \"$auth\" --post-data '{init}' {url} 2>&1 "
                    "| sed -n 's/^ *[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *//p' | tr -d '\\r'); "
                    "[ -n \"$sid\" ] || exit 3; "
                    f"wget -q -O - {accept} --header \"$auth\" --header \"Mcp-Session-Id: $sid\" "
                    f"--post-data '{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}}' {url} | grep -q '\"add\"' || exit 4; "
                    f"wget -q -O - {accept} --header \"$auth\" --header \"Mcp-Session-Id: $sid\" "
                    f"--post-data '{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{{\"name\":\"add\",\"arguments\":{{\"a\":2,\"b\":3}}}}}}' {url} "
                    "| grep -q '\"isError\":false' || exit 5"
                )
                out.append((cid(i), "route", route, 0, []))
                out.append((cid(i), "session", session, 0, [var]))
            else:
                out.append((cid(i), "reach", f"nc -w 1 {addr} {PORT} </dev/null", 1, []))
    return out


def run_probe(stack: Stack, busybox: str, run_label: str, probe) -> str | None:
    client, kind, script, expect, env = probe
    cmd = ["docker", "run", "--rm", "--label", LABEL, "--label", run_label,
           "--network", f"container:{stack.container(client)}"]
    for var in env:
        cmd += ["-e", var]  # the value comes from this process's environment, not argv
    cmd += [busybox, "sh", "-c", script]
    out = subprocess.run(cmd, env=stack.env, capture_output=True, text=True)
    ok = (out.returncode == 0) if expect == 0 else (out.returncode != 0 and out.returncode < 125)
    return None if ok else f"{kind} from {client}: exit {out.returncode} {out.stderr.strip()[:200]}"


def baseline(stack: Stack, busybox: str, parallel: int, run_label: str) -> tuple[float, list]:
    work = probes(stack)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        errors = [e for e in pool.map(lambda p: run_probe(stack, busybox, run_label, p), work) if e]
    return time.monotonic() - start, errors


# ---------------------------------------------------------------- cordon


def run_cordon(stack: Stack, binary: str, suite: str, results: Path) -> tuple[float, int, int, str]:
    """Wall time, peak RSS (KiB), exit code and the console (with a CPU-time line) of one
    suite run."""
    cmd = [binary, "compose", "--project", stack.project, "--scenario", str(stack.dir / "scenario.yaml"),
           "--suite", suite, "--results", str(results)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    output += f"\ncpu {usage.ru_utime:.2f}s user {usage.ru_stime:.2f}s system"
    return wall, usage.ru_maxrss, proc.returncode, output


def checks_in(results: Path) -> int:
    try:
        return len(json.loads((results / "report.json").read_text())["report"]["results"])
    except (OSError, KeyError, ValueError):
        return 0


def transient_checks(results: Path) -> list[str]:
    """Checks whose report carries transient observations (engine instability)."""
    try:
        report = json.loads((results / "report.json").read_text())["report"]
    except (OSError, KeyError, ValueError):
        return []
    return [r["name"] for r in report["results"] if r.get("transient")]


def profile(results: Path) -> list[str]:
    """Where cordon's time went: per family, own time and queue time of its checks."""
    try:
        report = json.loads((results / "report.json").read_text())["report"]
    except (OSError, KeyError, ValueError):
        return ["(no report.json)"]
    fams = {}
    for r in report["results"]:
        fams.setdefault(r["name"].split("::")[0], []).append(r)
    lines = []
    for fam, rs in sorted(fams.items()):
        own = sorted(secs(r.get("duration")) for r in rs)
        queued = sorted(secs(r.get("queued")) for r in rs)
        lines.append(
            f"  {fam:<9} {len(rs):>4} checks  own median {statistics.median(own)*1000:7.0f} ms  max {own[-1]*1000:7.0f} ms"
            f"  queued median {statistics.median(queued)*1000:7.0f} ms  max {queued[-1]*1000:7.0f} ms"
        )
    return lines


def secs(value) -> float:
    """report.json durations: seconds as a number, or {secs, nanos}."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return value.get("secs", 0) + value.get("nanos", 0) / 1e9
    if isinstance(value, str) and value.endswith("ms"):
        return float(value[:-2]) / 1000
    if isinstance(value, str) and value.endswith("s"):
        return float(value[:-1])
    return 0.0


# ---------------------------------------------------------------- the table


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def table(rows: dict, variants: list[str], runs: int) -> str:
    head = (f"{'pairs':>5} {'ctrs':>4} {'checks':>6} {'cordon':>8} | {'cordon s med [min-max]':>24} {'RSS MiB':>7} | "
            f"{'seq s med [min-max]':>24} | {'par8 s med [min-max]':>24} | {'seq/cordon':>10} {'par8/cordon':>11} | "
            f"{'fail/unstable':>13} {'baseline misjudged':>18}")
    lines = [f"median of {runs} run(s); the baselines run the route, reach and session probes "
             "only (one docker run each), cordon the whole compose suite",
             "fail/unstable: cordon runs that exited non-zero / reported engine instability (transient "
             "connects); baseline misjudged: probes that saw what cordon does not (e.g. a reach that "
             "crossed networks once)", head, "-" * len(head)]
    for pairs, r in sorted(rows.items()):
        seq = f"{spread(r['seq']):>24}" if r["seq"] else f"{'-':>24}"
        par = f"{spread(r['par8']):>24}" if r["par8"] else f"{'-':>24}"
        for v in variants:
            c = statistics.median(r[v]["wall"])
            rs = f"{statistics.median(r['seq']) / c:10.1f}" if r["seq"] else f"{'-':>10}"
            rp = f"{statistics.median(r['par8']) / c:11.1f}" if r["par8"] else f"{'-':>11}"
            lines.append(f"{pairs:>5} {r['containers']:>4} {r[v]['checks']:>6} {v:>8} | {spread(r[v]['wall']):>24} "
                         f"{max(r[v]['rss']) / 1024:7.1f} | {seq} | {par} | {rs} {rp} | "
                         f"{r[v]['failed']:>6}/{r[v]['unstable']:<6} {r['misjudged']:>18}")
    if 100 in rows and 200 in rows:
        series = [(v, f"cordon {v}", lambda r, v=v: r[v]["wall"]) for v in variants]
        series += [(k, f"baseline {k}", lambda r, k=k: r[k]) for k in ("seq", "par8")]
        for _, name, get in series:
            if get(rows[100]) and get(rows[200]):
                per = (statistics.median(get(rows[200])) - statistics.median(get(rows[100]))) / 100 * 1000
                lines.append(f"marginal cost per pair, 100 -> 200 pairs: {name}: {per:.1f} ms")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def free_block(candidates: list[str]) -> tuple[str, int]:
    """The first block of 16 /24s (a /20) no docker network overlaps: Docker 20.10 sometimes
    keeps a network with a stale endpoint after `down`, blocking its subnet until dockerd
    restarts."""
    ids = subprocess.run(["docker", "network", "ls", "-q"], capture_output=True, text=True).stdout.split()
    used = subprocess.run(["docker", "network", "inspect", "--format",
                           "{{range .IPAM.Config}}{{.Subnet}} {{end}}", *ids],
                          capture_output=True, text=True).stdout.split()
    taken = set()
    for u in used:
        octets = u.split("/")[0].split(".")
        if len(octets) == 4:
            taken.add((f"{octets[0]}.{octets[1]}", int(octets[2]) // 16))
    for c in candidates:
        for m in range(16):
            if (c, m) not in taken:
                return c, m
    raise RuntimeError(f"every /20 of {candidates} overlaps a docker network")


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="repetitions of each contender per size (default 3)")
    ap.add_argument("--sizes", default="12,100,200", help=f"pair counts, of {sorted(SIZES)} (default all)")
    ap.add_argument("--cordon", default=str(REPO / "target/release/cordon"), help="the cordon binary")
    ap.add_argument("--suite", default=str(REPO / "suites/compose.yaml"), help="the suite cordon runs")
    ap.add_argument("--fixture-image", default=os.environ.get("FIXTURE_TAG", "cordon-fixture:dev"))
    ap.add_argument("--busybox-image", default=os.environ.get("BUSYBOX_TAG", "cordon-busybox:dev"))
    ap.add_argument("--subnets", default="10.161-169",
                    help="the /16s the stacks may use, first two octets (default 10.161-169); each size takes "
                         "the first /20 in them no docker network overlaps")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=BINARY[,SUITE]",
                    help="another cordon to run interleaved with the rest (e.g. a build of main: "
                         "before=/tmp/cordon-main,/tmp/compose-main.yaml); one table row each")
    ap.add_argument("--only-cordon", action="store_true", help="skip the baselines (quick iterations)")
    ap.add_argument("--profile", action="store_true", help="print per-family own and queue time of cordon's checks")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",")]
    variants = {"this": (args.cordon, args.suite)}
    for spec in args.also:
        name, _, rest = spec.partition("=")
        binary, _, suite = rest.partition(",")
        if not name or not binary or name in variants:
            ap.error(f"--also {spec}: expected a new NAME=BINARY[,SUITE]")
        variants[name] = (binary, suite or args.suite)
    if any(s not in SIZES for s in sizes):
        ap.error(f"sizes must be among {sorted(SIZES)}")
    if os.geteuid() != 0:
        ap.error("cordon enters container namespaces: run as root")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    run_id = f"{os.getpid()}"
    run_label = f"cordon-bench-run={run_id}"
    first, rest = args.subnets.split(".")
    low, _, high = rest.partition("-")
    candidates = [f"{first}.{n}" for n in range(int(low), int(high or low) + 1)]
    rows = {}
    stack = None
    workdir = Path(tempfile.mkdtemp(prefix="cordon-bench-"))
    try:
        for pairs in sizes:
            stack = Stack(pairs, free_block(candidates), args.fixture_image, workdir, run_id)
            print(f"== {pairs} pairs ({stack.clients} clients x {stack.providers} providers, "
                  f"{stack.containers()} containers): deploying {stack.project}", file=sys.stderr, flush=True)
            stack.up()
            results = stack.dir / "results"
            # Warm-up: waits until every container serves (cordon retries "not ready").
            _, _, code, output = run_cordon(stack, args.cordon, args.suite, results)
            if code != 0:
                raise RuntimeError(f"cordon's warm-up run exited {code}:\n{output[-3000:]}")
            row = {"seq": [], "par8": [], "containers": stack.containers(), "misjudged": 0}
            for v in variants:
                row[v] = {"wall": [], "rss": [], "checks": 0, "failed": 0, "unstable": 0}
            contenders = list(variants) + ([] if args.only_cordon else ["seq", "par8"])
            for run in range(args.runs):
                # Interleaved, and rotated so no contender always follows the same one.
                for who in contenders[run % len(contenders):] + contenders[:run % len(contenders)]:
                    if who in variants:
                        binary, suite = variants[who]
                        wall, rss, code, output = run_cordon(stack, binary, suite, results)
                        v = row[who]
                        v["wall"].append(wall)
                        v["rss"].append(rss)
                        v["checks"] = checks_in(results)
                        unstable = transient_checks(results)
                        v["unstable"] += bool(unstable)
                        note = f"RSS {rss / 1024:.1f} MiB, {output.rsplit(chr(10), 1)[-1]}"
                        if unstable:
                            note += f"; engine instability observed in {', '.join(unstable)}"
                        if code != 0:
                            v["failed"] += 1
                            note += f"; exit {code}:\n{output[-3000:]}"
                        if args.profile:
                            note += "\n" + "\n".join(profile(results))
                    else:
                        wall, errors = baseline(stack, args.busybox_image, 1 if who == "seq" else 8, run_label)
                        row[who].append(wall)
                        row["misjudged"] += len(errors)
                        note = f"{len(probes(stack))} probes"
                        if errors:
                            note += f"; {len(errors)} saw what cordon does not:\n     " + "\n     ".join(errors[:10])
                    print(f"   run {run + 1} {who:<8} {wall:7.2f}s  {note}", file=sys.stderr, flush=True)
            rows[pairs] = row
            stack.down()
            stack = None
    except (Interrupted, KeyboardInterrupt) as e:
        print(f"interrupted ({e}): tearing down", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        leftovers = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={run_label}"],
                                   capture_output=True, text=True).stdout.split()
        if leftovers:
            subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True)
        if stack is not None:
            stack.down()
        subprocess.run(["rm", "-rf", str(workdir)])
        if rows:
            print(table(rows, list(variants), args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
