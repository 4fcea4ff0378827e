#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sweep UDP echo (port 7) over COUNT consecutive IPv4 addresses from FIRST,
each in turn, WINDOW requests outstanding, ROUNDS times (or until MIN_SECS
passed). One JSON line a round: seconds, peers answered, lost requests,
round-trip p50/p99 in microseconds. A request unanswered after TIMEOUT
seconds is lost; each peer gets one request a round."""
import argparse
import ipaddress
import json
import select
import socket
import struct
import time

ap = argparse.ArgumentParser()
ap.add_argument("--first", required=True)
ap.add_argument("--count", type=int, required=True)
ap.add_argument("--rounds", type=int, default=1)
ap.add_argument("--min-secs", type=float, default=0)
ap.add_argument("--window", type=int, default=64)
ap.add_argument("--timeout", type=float, default=4.0)
a = ap.parse_args()

first = int(ipaddress.IPv4Address(a.first))
addrs = [str(ipaddress.IPv4Address(first + i)) for i in range(a.count)]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# a window of replies must fit, whatever the driver's skb truesize (an
# in-tree receive skb holds a 4 KiB buffer): SO_RCVBUFFORCE, as root,
# goes past net.core.rmem_max
try:
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33),
                 16 << 20)
except OSError:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
s.setblocking(False)
poll = select.poll()
poll.register(s, select.POLLIN)
HDR = struct.Struct("!IId")


def pct(v, p):
    if not v:
        return -1
    return int(v[min(len(v) - 1, int(len(v) * p / 100))] * 1e6)


start = time.monotonic()
rnd = 0
seq = 0
while rnd < a.rounds or time.monotonic() - start < a.min_secs:
    t0 = time.monotonic()
    out = {}            # seq -> (peer, sent)
    answered = set()
    rtts = []
    lost = 0
    nxt = 0
    while nxt < a.count or out:
        now = time.monotonic()
        while nxt < a.count and len(out) < a.window:
            seq += 1
            try:
                s.sendto(HDR.pack(nxt, seq, now), (addrs[nxt], 7))
            except (BlockingIOError, OSError):
                seq -= 1
                break
            out[seq] = (nxt, now)
            nxt += 1
        for _ in poll.poll(5):
            while True:
                try:
                    data = s.recv(64)
                except BlockingIOError:
                    break
                if len(data) < HDR.size:
                    continue
                peer, sq, sent = HDR.unpack_from(data)
                if out.pop(sq, None) is not None:
                    answered.add(peer)
                    rtts.append(time.monotonic() - sent)
        now = time.monotonic()
        for sq in [k for k, v in out.items() if now - v[1] > a.timeout]:
            del out[sq]
            lost += 1
    rtts.sort()
    silent = [addrs[i] for i in range(a.count) if i not in answered]
    print(json.dumps({"round": rnd, "secs": round(time.monotonic() - t0, 3),
                      "answered": len(answered), "lost": lost,
                      "p50_us": pct(rtts, 50), "p99_us": pct(rtts, 99),
                      "silent": silent[:8], "end": time.time()}),
          flush=True)
    rnd += 1
