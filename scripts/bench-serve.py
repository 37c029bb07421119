#!/usr/bin/env python3
"""fm serve's figures (BENCHMARKS.md, "fm serve: idle cost and time to a
row"): a home of 100 pane-less tasks, `fm serve` on a free port, 5 open
event streams; its RSS and CPU over an idle minute, then, 20 times, the
time from a worker's `needs-decision` line to the event carrying its row's
decision link.

Usage: scripts/bench-serve.py PATH/TO/fm [IDLE_SECS]
"""
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def main():
    fm = sys.argv[1]
    idle = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    home = tempfile.mkdtemp(prefix="fm-serve-bench-")
    try:
        subprocess.run([fm, "init", home], check=True, stdout=subprocess.DEVNULL)
        state = os.path.join(home, "state")
        for i in range(100):
            meta = os.path.join(state, f"t{i}.meta")
            with open(meta, "w") as f:
                f.write("kind=secondmate\nrepo=shop\n")
            os.chmod(meta, 0o600)
            with open(os.path.join(state, f"t{i}.status"), "w") as f:
                f.write(f"working: step {i}\n")
        env = {"FM_HOME": home, "PATH": os.environ.get("PATH", "")}
        p = subprocess.Popen([fm, "serve", "--listen", "127.0.0.1:0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        base, token = p.stdout.readline().decode().strip().split("/?token=")
        host, port = base.split("//")[1].split(":")
        port = int(port)
        c = http.client.HTTPConnection(host, port)
        c.request("GET", "/?token=" + token)
        r = c.getresponse()
        cookie = r.getheader("set-cookie").split(";")[0]
        r.read()

        def stream():
            c = http.client.HTTPConnection(host, port)
            c.request("GET", "/events", headers={"Cookie": cookie})
            r = c.getresponse()
            buf = b""
            while b"\n\n" not in buf:
                buf += r.read1(65536)
            return c, r, buf[buf.index(b"\n\n") + 2:]

        pages = [stream() for _ in range(5)]
        time.sleep(2)
        hz = os.sysconf("SC_CLK_TCK")

        def ticks():
            with open(f"/proc/{p.pid}/stat") as f:
                v = f.read().rsplit(")", 1)[1].split()
            return int(v[11]) + int(v[12])

        def rss():
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
            return 0

        t0, w0 = ticks(), time.monotonic()
        time.sleep(idle)
        cpu = (ticks() - t0) / hz / (time.monotonic() - w0) * 100
        print(f"idle, 100 tasks, 5 open pages: RSS {rss() / 1024:.1f} MiB, CPU {cpu:.2f}% over {idle:.0f} s")
        lat = []
        for n in range(20):
            c, r, buf = stream()
            task = f"t{10 + n}"
            t = time.monotonic()
            with open(os.path.join(state, f"{task}.status"), "a") as f:
                f.write(f"needs-decision [key=k{n}]: which?\n")
            want = f"/task/{task}/decision/k{n}".encode()
            while want not in buf:
                buf += r.read1(65536)
            lat.append((time.monotonic() - t) * 1000)
            c.close()
        lat.sort()
        print(f"needs-decision line to its row in an open stream, 20 runs: "
              f"min {lat[0]:.0f} ms, median {lat[10]:.0f} ms, max {lat[-1]:.0f} ms")
        for c, _, _ in pages:
            c.close()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
