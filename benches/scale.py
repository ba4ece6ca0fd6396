#!/usr/bin/env python3
"""cordon at scale against the platform's way: one throwaway container per probe.

For each size (client×provider pairs: 12, 100, 200, 1000, 5000) this generates a stack of
fixture containers and its scenario, brings it up through the engine's CLI (compose's
labels and names, many calls at a time), then runs, interleaved and repeated:
  - cordon: the suite (suites/compose.yaml, or only --families) against the stack;
  - baseline seq: the route, reach and session work done the way a platform's scripts
    do it, one `docker run --rm --network container:<client>` of the busybox image per
    probe, one after another (past --baseline-sample probes, a sample, its time scaled);
  - baseline par8: the same probes, 8 at a time.
Before the timed runs, cordon runs the same suite at concurrency 8: every timed run must
reach the same verdicts (the `differ` column). It prints wall time, CPU seconds and peak
RSS, the ratios, what the run asked of the engine and the kernel per pair (report.json's
`cost`) with its growth from size to size, and the marginal cost per pair. Everything it
starts is torn down on every path.

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
# pairs -> (clients, providers, provider networks, providers with 3 replicas)
SIZES = {12: (4, 3, 3, 0), 100: (10, 10, 10, 0), 200: (20, 10, 10, 0), 1000: (50, 20, 20, 0),
         5000: (100, 50, 10, 10)}
PORT = 8000
LABEL = "cordon-test=1"
# A stack's networks: dnsnet and one /24 per provider network, in a block of this many /24s.
BLOCK = 32


def admitted(client: int, group: int) -> bool:
    """Each provider network admits every other client: both admitted and refused pairs
    exist, and every client is on half of the networks."""
    return (client + group) % 2 == 0


def cid(i: int) -> str:
    return f"c{i:02d}"


def pid(j: int) -> str:
    return f"p{j:02d}"


# ---------------------------------------------------------------- the generated stack


class Stack:
    """A C×P stack: `p<j>` providers (fixture MCP servers, some with 3 replicas), each on
    one provider network `net-g<k>` (one per provider at the small sizes, shared by a
    group of providers at 5000 pairs: the same admission pattern with fewer networks),
    `c<i>` clients (`cordon-fixture sleep`) on `dnsnet` and on the provider networks that
    admit them, a wildcard DNS server (`*.bench.test`) as in the reference stack, and one
    disabled provider `gone` whose former consumer is c01.

    Deployed through the engine's CLI, many calls at a time, with compose's labels and
    names (docker-compose 1.29 stops making progress on a stack this wide); cordon finds
    it exactly as it finds a compose project."""

    def __init__(self, pairs: int, block: tuple[str, int], image: str, workdir: Path, run_id: str):
        self.pairs = pairs
        self.clients, self.providers, self.groups, replicated = SIZES[pairs]
        step = self.providers // replicated if replicated else 0
        self.replicated = {j for j in range(1, self.providers + 1) if step and j % step == 0}
        self.block = block
        self.image = image
        self.dir = workdir / f"size-{pairs}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.project = f"cordon-bench-{pairs}-{run_id}"
        self.tokens = {f"P{j:02d}_TOKEN": secrets.token_hex(16) for j in range(1, self.providers + 1)}
        self.tokens["GONE_TOKEN"] = secrets.token_hex(16)
        self.env = dict(os.environ, **self.tokens)

    def group(self, j: int) -> int:
        return (j - 1) % self.groups + 1

    def serves(self, i: int, j: int) -> bool:
        return admitted(i, self.group(j))

    def replicas(self, j: int) -> int:
        return 3 if j in self.replicated else 1

    def provider_addr(self, j: int) -> str | None:
        """The fixed address of a single-replica provider (replicas get the engine's)."""
        if j in self.replicated:
            return None
        return f"{self.net(self.group(j))}.{10 + (j - 1) // self.groups}"

    def net(self, k: int) -> str:
        """The k-th /24 of this stack's block (k = 0: dnsnet, k = g: net-g<g>)."""
        first16, m = self.block
        return f"{first16}.{BLOCK * m + k}"

    def containers(self) -> int:
        return self.clients + sum(self.replicas(j) for j in range(1, self.providers + 1)) + 1

    def networks(self) -> dict:
        nets = {"dnsnet": f"{self.net(0)}.0/24"}
        nets.update({f"net-g{g:02d}": f"{self.net(g)}.0/24" for g in range(1, self.groups + 1)})
        return nets

    def services(self) -> list:
        """(service, replicas, command, environment names, [(network, fixed address or None)])."""
        dns_addr = f"{self.net(0)}.53"
        out = [("dns", 1, ["dns", "--listen", "0.0.0.0:53", "--zone", "bench.test", "--wildcard", dns_addr], [],
                [("dnsnet", dns_addr)])]
        for j in range(1, self.providers + 1):
            var = f"P{j:02d}_TOKEN"
            command = ["mcp", "--listen", f"0.0.0.0:{PORT}", "--token-env", var, "--tools", "add,echo", "--name", pid(j)]
            out.append((pid(j), self.replicas(j), command, [var], [(f"net-g{self.group(j):02d}", self.provider_addr(j))]))
        for i in range(1, self.clients + 1):
            nets = [("dnsnet", None)] + [(f"net-g{g:02d}", None) for g in range(1, self.groups + 1) if admitted(i, g)]
            out.append((cid(i), 1, ["sleep"], [], nets))
        return out

    def scenario_doc(self) -> dict:
        credentials = {f"{pid(j)}-token": {"env": f"P{j:02d}_TOKEN"} for j in range(1, self.providers + 1)}
        credentials["gone-token"] = {"env": "GONE_TOKEN"}
        providers = {}
        for j in range(1, self.providers + 1):
            providers[pid(j)] = {
                "url": f"http://{pid(j)}:{PORT}/mcp",
                "credential": f"{pid(j)}-token",
                "allowed_consumers": [cid(i) for i in range(1, self.clients + 1) if self.serves(i, j)],
                "tools": {"allowlist": ["add", "echo"]},
                "read": {"tool": "add", "arguments": {"a": 2, "b": 3}, "expect": {"json_subset": {"result": 5}}},
            }
        providers["gone"] = {
            "url": f"http://gone:{PORT}/mcp",
            "credential": "gone-token",
            "disabled": True,
            "allowed_consumers": [cid(1)],
            "networks": [f"net-g{self.group(1):02d}"],
            "tools": {"allowlist": []},
        }
        clients = {
            cid(i): {
                "credentials": {
                    pid(j): f"{pid(j)}-token" for j in range(1, self.providers + 1) if self.serves(i, j)
                }
            }
            for i in range(1, self.clients + 1)
        }
        return {"name": f"bench-{self.pairs}", "project": self.project, "credentials": credentials,
                "providers": providers, "clients": clients}

    def docker(self, *args, check=True):
        out = subprocess.run(["docker", *args], env=self.env, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args[:4])} ... failed: {out.stderr.strip()[-500:]}")
        return out

    def up(self, parallel: int = 8) -> float:
        """Creates the networks, then every container (created, connected, started),
        `parallel` engine calls at a time; returns the seconds it took."""
        # JSON is YAML: cordon reads the scenario as written.
        (self.dir / "scenario.yaml").write_text(json.dumps(self.scenario_doc(), indent=1))
        start = time.monotonic()
        labels = ["--label", LABEL, "--label", f"com.docker.compose.project={self.project}"]
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(lambda n: self.docker("network", "create", "--driver", "bridge", "--subnet", n[1], *labels,
                                                "--label", f"com.docker.compose.network={n[0]}",
                                                f"{self.project}_{n[0]}"), self.networks().items()))
            work = [(svc, k, cmd, env, nets) for svc, n, cmd, env, nets in self.services() for k in range(1, n + 1)]
            list(pool.map(lambda w: self.start_one(*w, labels), work))
        return time.monotonic() - start

    def start_one(self, service, number, command, env, nets, labels):
        name = f"{self.project}_{service}_{number}"
        first, *rest = nets
        hardened = ["--user", "65534:65534", "--read-only", "--cap-drop", "ALL",
                    "--security-opt", "no-new-privileges:true", "--memory", "64m", "--cpus", "0.5",
                    "--pids-limit", "64"]
        # The fixtures log every request. The engine copying those lines (containerd-shim
        # and dockerd, a fifth of this machine's CPU during a 5000-pair run, measured) is
        # the stack's cost, not cordon's, and on two cores it would slow whatever runs
        # beside it. CORDON_BENCH_LOGS=1 keeps the request lines and the engine's logging.
        logs = os.environ.get("CORDON_BENCH_LOGS") == "1"
        quiet = [] if logs else ["--log-driver", "none", "-e", "FIXTURE_QUIET=1"]
        is_client = service.startswith("c")
        dns = ["--dns", f"{self.net(0)}.53", "--dns-search", "bench.test"] if is_client else ["--dns", "127.0.0.1"]
        attach = lambda net, addr: ["--alias", service] + (["--ip", addr] if addr else [])
        args = ["create", "--name", name, *labels, "--label", f"com.docker.compose.service={service}",
                "--label", f"com.docker.compose.container-number={number}", *hardened, *quiet, *dns,
                "--network", f"{self.project}_{first[0]}", "--network-alias", service,
                *(["--ip", first[1]] if first[1] else [])]
        for var in env:
            args += ["-e", var]  # the value comes from this process's environment, not argv
        self.docker(*args, self.image, *command)
        for net, addr in rest:
            self.docker("network", "connect", *attach(net, addr), f"{self.project}_{net}", name)
        self.docker("start", name)

    def down(self):
        label = f"label=com.docker.compose.project={self.project}"
        ids = self.docker("ps", "-aq", "--filter", label, check=False).stdout.split()
        # One `docker rm -f` of 171 containers hung Docker 20.10 for minutes: a few at a
        # time, each bounded.
        def remove(cid):
            try:
                subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60)
            except subprocess.TimeoutExpired:
                print(f"warning: docker rm -f {cid} took over 60 s", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(remove, ids))
        # Docker 20.10 may keep a stale endpoint for a moment: retry.
        for _ in range(10):
            nets = self.docker("network", "ls", "-q", "--filter", label, check=False).stdout.split()
            if not nets:
                return
            self.docker("network", "rm", *nets, check=False)
            time.sleep(1)
        print(f"warning: networks of {self.project} left behind", file=sys.stderr)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"


# ---------------------------------------------------------------- the baseline


def probes(stack: Stack) -> list:
    """The platform's way: for every pair, the probes a script would run, each as
    (client service, shell script, expected exit code).
    route: the name resolves and its address accepts TCP (1 s timeout);
    session: initialize, tools/list and tools/call with the bearer (wget POSTs);
    reach: a non-admitted client's connect to the provider's address fails (1 s).
    Providers with replicas are left out (a script has no fixed address for them).
    busybox's nslookup tries the search list before the bare name (the wildcard would
    answer), so the script asks for the absolute name, as the clients' libc does with
    ndots:0."""
    out = []
    accept = "--header 'Accept: application/json, text/event-stream' --header 'Content-Type: application/json'"
    for i in range(1, stack.clients + 1):
        for j in range(1, stack.providers + 1):
            name, addr, var = pid(j), stack.provider_addr(j), f"P{j:02d}_TOKEN"
            url = f"http://{name}:{PORT}/mcp"
            if addr is None:
                continue  # replicas: no fixed address for a script to try
            if stack.serves(i, j):
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


def sample(work: list, at_most: int) -> list:
    """Every k-th probe, at most `at_most` of them, spread over every client."""
    if len(work) <= at_most:
        return work
    step = len(work) / at_most
    return [work[int(k * step)] for k in range(at_most)]


def baseline(stack: Stack, busybox: str, parallel: int, run_label: str, at_most: int) -> tuple[float, list]:
    """Wall time of every probe (estimated from a sample when there are more than
    `at_most`: the sample's time scaled by how many probes it stands for)."""
    work = probes(stack)
    picked = sample(work, at_most)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        errors = [e for e in pool.map(lambda p: run_probe(stack, busybox, run_label, p), picked) if e]
    return (time.monotonic() - start) * len(work) / len(picked), errors


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


def cpu_of(output: str) -> float:
    """user + system seconds from the `cpu ...` line run_cordon appends."""
    words = output.rsplit("\n", 1)[-1].split()
    try:
        return float(words[1].rstrip("s")) + float(words[3].rstrip("s"))
    except (IndexError, ValueError):
        return 0.0


def cost_of(results: Path) -> dict:
    """What the run asked of the engine and the kernel (report.json's `cost`)."""
    try:
        return json.loads((results / "report.json").read_text())["report"].get("cost", {})
    except (OSError, KeyError, ValueError):
        return {}


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
    head = (f"{'pairs':>5} {'ctrs':>4} {'up s':>5} {'checks':>6} {'cordon':>8} | {'cordon s med [min-max]':>24} "
            f"{'cpu s':>6} {'RSS MiB':>7} | {'seq s med [min-max]':>24} | {'par8 s med [min-max]':>24} | "
            f"{'seq/cordon':>10} {'par8/cordon':>11} | {'fail/unstable':>13} {'misjudged':>9} {'differ':>6}")
    lines = [f"median of {runs} run(s); the baselines run the route, reach and session probes "
             "only (one docker run each; past --baseline-sample probes, a sample's time scaled up), cordon the "
             "suite's families",
             "up s: bring-up of the stack; fail/unstable: cordon runs that exited non-zero / reported engine "
             "instability; misjudged: baseline probes that saw what cordon does not; differ: verdicts that "
             "differ from the same suite at concurrency 8", head, "-" * len(head)]
    for pairs, r in sorted(rows.items()):
        seq = f"{spread(r['seq']):>24}" if r["seq"] else f"{'-':>24}"
        par = f"{spread(r['par8']):>24}" if r["par8"] else f"{'-':>24}"
        for v in variants:
            c = statistics.median(r[v]["wall"])
            rs = f"{statistics.median(r['seq']) / c:10.1f}" if r["seq"] else f"{'-':>10}"
            rp = f"{statistics.median(r['par8']) / c:11.1f}" if r["par8"] else f"{'-':>11}"
            lines.append(f"{pairs:>5} {r['containers']:>4} {r['up']:5.0f} {r[v]['checks']:>6} {v:>8} | "
                         f"{spread(r[v]['wall']):>24} {statistics.median(r[v]['cpu']):6.2f} "
                         f"{max(r[v]['rss']) / 1024:7.1f} | {seq} | {par} | {rs} {rp} | "
                         f"{r[v]['failed']:>6}/{r[v]['unstable']:<6} {r['misjudged']:>9} {r['disagree']:>6}")
    lines.append("")
    lines.append("how cost grows (per pair, and the ratio to the previous size's per-pair figure; a ratio "
                 "well above 1 is work growing faster than the pairs):")
    for v in variants:
        previous = None
        for pairs, r in sorted(rows.items()):
            figures = {"wall ms": statistics.median(r[v]["wall"]) * 1000, "cpu ms": statistics.median(r[v]["cpu"]) * 1000,
                       "RSS KiB": max(r[v]["rss"])}
            figures.update({k.replace("_", " "): float(n) for k, n in sorted(r[v]["cost"].items())})
            per = {k: x / pairs for k, x in figures.items()}
            cells = []
            for k, x in per.items():
                ratio = f" ({x / previous[k]:.2f}x)" if previous and previous.get(k) else ""
                cells.append(f"{k} {x:.2f}{ratio}")
            lines.append(f"  {v} {pairs:>5} pairs: " + ", ".join(cells))
            previous = per
    sizes = sorted(rows)
    for a, b in zip(sizes, sizes[1:]):
        for v in variants:
            per = (statistics.median(rows[b][v]["wall"]) - statistics.median(rows[a][v]["wall"])) / (b - a) * 1000
            lines.append(f"marginal cost per pair, {a} -> {b} pairs: cordon {v}: {per:.2f} ms")
        for k in ("seq", "par8"):
            if rows[a][k] and rows[b][k]:
                per = (statistics.median(rows[b][k]) - statistics.median(rows[a][k])) / (b - a) * 1000
                lines.append(f"marginal cost per pair, {a} -> {b} pairs: baseline {k}: {per:.2f} ms")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def free_block(candidates: list[str]) -> tuple[str, int]:
    """The first block of BLOCK /24s no docker network overlaps: Docker 20.10 sometimes
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
            taken.add((f"{octets[0]}.{octets[1]}", int(octets[2]) // BLOCK))
    for c in candidates:
        for m in range(256 // BLOCK):
            if (c, m) not in taken:
                return c, m
    raise RuntimeError(f"every block of {BLOCK} /24s in {candidates} overlaps a docker network")


def derived_suite(base: str, out: Path, families: str, concurrency: int | None = None) -> str:
    """`base` with its `families:` (unless `all`) and `concurrency:` lines replaced."""
    lines = []
    for line in Path(base).read_text().splitlines():
        if families != "all" and line.startswith("families:"):
            line = f"families: [{families}]"
        if concurrency is not None and line.startswith("concurrency:"):
            line = f"concurrency: {concurrency}"
        lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return str(out)


def verdicts(results: Path) -> dict:
    try:
        report = json.loads((results / "report.json").read_text())["report"]
    except (OSError, KeyError, ValueError):
        return {}
    return {r["name"]: r["verdict"] for r in report["results"]}


def disagreement(a: dict, b: dict) -> list[str]:
    out = [f"{n}: {a.get(n, 'absent')} vs {b.get(n, 'absent')}" for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
    return out


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="repetitions of each contender per size (default 3)")
    ap.add_argument("--sizes", default="12,100,200,1000,5000", help=f"pair counts, of {sorted(SIZES)} (default all)")
    ap.add_argument("--cordon", required=True, help="the cordon binary (benches/scale.sh asks cargo where it is)")
    ap.add_argument("--suite", default=str(REPO / "suites/compose.yaml"), help="the suite cordon runs")
    ap.add_argument("--fixture-image", default=os.environ.get("FIXTURE_TAG", "cordon-fixture:dev"))
    ap.add_argument("--busybox-image", default=os.environ.get("BUSYBOX_TAG", "cordon-busybox:dev"))
    ap.add_argument("--subnets", default="10.161-169",
                    help="the /16s the stacks may use, first two octets (default 10.161-169); each size takes "
                         f"the first block of {BLOCK} /24s in them no docker network overlaps")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=BINARY[,SUITE]",
                    help="another cordon to run interleaved with the rest (e.g. a build of main: "
                         "before=/tmp/cordon-main,/tmp/compose-main.yaml); one table row each")
    ap.add_argument("--only-cordon", action="store_true", help="skip the baselines (quick iterations)")
    ap.add_argument("--families", default="all",
                    help="the suite's families cordon runs, comma-separated, or `all` (default) for the suite as is")
    ap.add_argument("--baseline-sample", type=int, default=400, metavar="N",
                    help="run at most N of the baseline's probes and scale its time by how many there are "
                         "(default 400)")
    ap.add_argument("--no-agreement", action="store_true",
                    help="skip the run at concurrency 8 whose verdicts every other run must match")
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
            brought_up = stack.up()
            print(f"   brought up in {brought_up:.1f}s ({len(stack.networks())} networks)", file=sys.stderr, flush=True)
            results = stack.dir / "results"
            suites = {v: derived_suite(suite, stack.dir / f"suite-{v}.yaml", args.families)
                      for v, (_, suite) in variants.items()}
            # Warm-up: waits until every container serves (cordon retries "not ready").
            _, _, code, output = run_cordon(stack, args.cordon, suites["this"], results)
            if code != 0:
                raise RuntimeError(f"cordon's warm-up run exited {code}:\n{output[-3000:]}")
            reference = {}
            if not args.no_agreement:
                # The verdicts every run must reach: the same suite, 8 checks at a time.
                slow = derived_suite(variants["this"][1], stack.dir / "suite-8.yaml", args.families, 8)
                wall, _, code, _ = run_cordon(stack, args.cordon, slow, results)
                reference = verdicts(results)
                print(f"   concurrency 8: {wall:.2f}s, exit {code}, {len(reference)} verdicts", file=sys.stderr, flush=True)
            row = {"seq": [], "par8": [], "containers": stack.containers(), "misjudged": 0, "up": brought_up,
                   "disagree": 0}
            for v in variants:
                row[v] = {"wall": [], "rss": [], "cpu": [], "checks": 0, "failed": 0, "unstable": 0, "cost": {}}
            contenders = list(variants) + ([] if args.only_cordon else ["seq", "par8"])
            for run in range(args.runs):
                # Interleaved, and rotated so no contender always follows the same one.
                for who in contenders[run % len(contenders):] + contenders[:run % len(contenders)]:
                    if who in variants:
                        binary, _ = variants[who]
                        wall, rss, code, output = run_cordon(stack, binary, suites[who], results)
                        v = row[who]
                        v["wall"].append(wall)
                        v["rss"].append(rss)
                        v["cpu"].append(cpu_of(output))
                        v["cost"] = cost_of(results)
                        v["checks"] = checks_in(results)
                        differ = disagreement(reference, verdicts(results)) if reference else []
                        row["disagree"] += len(differ)
                        unstable = transient_checks(results)
                        v["unstable"] += bool(unstable)
                        note = f"RSS {rss / 1024:.1f} MiB, {output.rsplit(chr(10), 1)[-1]}"
                        if unstable:
                            note += f"; engine instability observed in {', '.join(unstable)}"
                        if code != 0:
                            v["failed"] += 1
                            note += f"; exit {code}:\n{output[-3000:]}"
                        if differ:
                            note += f"; {len(differ)} verdict(s) differ from concurrency 8:\n     " + "\n     ".join(differ[:10])
                        if args.profile:
                            note += "\n" + "\n".join(profile(results))
                    else:
                        wall, errors = baseline(stack, args.busybox_image, 1 if who == "seq" else 8, run_label,
                                                args.baseline_sample)
                        row[who].append(wall)
                        row["misjudged"] += len(errors)
                        n = len(probes(stack))
                        note = f"{n} probes" + (f" (estimated from {args.baseline_sample})" if n > args.baseline_sample else "")
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
