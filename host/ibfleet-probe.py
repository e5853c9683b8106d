#!/usr/bin/env python3
"""ibfleet-probe: every ping cell of one source host in one run, over raw ICMP sockets.

verify sends this program to a host that has python3 (src/render/verify-scripts.ts) with its cells
on stdin, one `ID SOURCE DESTINATION` a line. Each probe leaves from a raw socket bound to the
cell's source address, so the kernel's policy rules pick the route exactly as `ping -I SOURCE`
does. A cell sends COUNT echoes GAP ms apart and passes when every one is answered by its
destination before its deadline (WAIT ms after its last echo): the cell semantics of
`ping -c COUNT -i GAP -W WAIT`, the same whichever prober runs.

Replies are matched to cells by identifier and sequence (a probe's number spread over both: a
host may have more than 65 536 probes) and by a random token in the payload, so another prober's
echoes and a hostile host's forgeries never count. One line per cell as it ends:

    r ID SENT GOT AVG_US NOTE

AVG_US is `-` without replies; NOTE is `-`, `from:ADDR` (an answer from another address than the
cell's destination), `unreach:CODE:ADDR` (an ICMP error about the probe, from ADDR) or
`err:ERRNO` (the kernel refused to send: no route, for one). The program never prints anything
else on stdout but `done` at the end; it runs on Python 3.6 and later (RHEL 8's platform python).
"""
import errno
import os
import select
import socket
import struct
import sys
import time

ICMP_ECHO, ICMP_REPLY, ICMP_UNREACH, ICMP_TIME_EXCEEDED = 8, 0, 3, 11
# Linux's ICMP_FILTER (SOL_RAW option 1): a mask of the types a raw socket does NOT receive. Only
# replies and the errors about our echoes are read; the fleet's echo requests to this host are not.
SOL_RAW, ICMP_FILTER = 255, 1
KEEP = (1 << ICMP_REPLY) | (1 << ICMP_UNREACH) | (1 << ICMP_TIME_EXCEEDED)
# Echoes in a row before the program reads what came back: keeps the kernel's queues short.
BURST = 32
# The most echoes a second one host sends: a fleet's prober runs on every host at once.
RATE = 20000


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def read_cells(stream):
    cells = []
    for line in stream:
        parts = line.split()
        if len(parts) != 3:
            continue
        socket.inet_aton(parts[1])
        socket.inet_aton(parts[2])
        cells.append((int(parts[0]), parts[1], parts[2]))
    return cells


class Prober:
    def __init__(self, cells, count, gap, wait):
        self.cells, self.count, self.gap, self.wait = cells, count, gap, wait
        self.token = os.urandom(8)
        self.base = struct.unpack("!H", os.urandom(2))[0]
        n = len(cells)
        self.sent = [0] * n
        self.got = [0] * n
        self.rtt = [0.0] * n
        self.note = ["-"] * n
        self.deadline = [None] * n
        self.stamps = {}
        self.open = n
        self.finished = [False] * n
        self.sockets = {}
        # A source the kernel will not bind (its address gone with a port or link down) fails only
        # its own cells, as `err:ERRNO`: the host's other NICs are still probed.
        self.unbound = {}
        for _, source, _ in cells:
            if source not in self.sockets and source not in self.unbound:
                s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
                try:
                    s.setsockopt(SOL_RAW, ICMP_FILTER, struct.pack("I", ~KEEP & 0xFFFFFFFF))
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                    s.bind((source, 0))
                except OSError as e:
                    s.close()
                    self.unbound[source] = "err:" + (errno.errorcode.get(e.errno) or str(e.errno))
                    continue
                s.setblocking(False)
                self.sockets[source] = s
        self.out = []

    def packet(self, number):
        ident = (self.base + (number >> 16)) & 0xFFFF
        body = self.token + struct.pack("!I", number) + b"\0" * 44
        header = struct.pack("!BBHHH", ICMP_ECHO, 0, 0, ident, number & 0xFFFF)
        return struct.pack("!BBHHH", ICMP_ECHO, 0, checksum(header + body), ident, number & 0xFFFF) + body

    def number_of(self, ident, seq, body):
        if body[:8] != self.token or len(body) < 12:
            return None
        number = struct.unpack("!I", body[8:12])[0]
        if number >= len(self.cells) * self.count:
            return None
        if ((self.base + (number >> 16)) & 0xFFFF, number & 0xFFFF) != (ident, seq):
            return None
        return number

    def send(self, i, k):
        _, source, destination = self.cells[i]
        number = i * self.count + k
        data = self.packet(number)
        if source in self.unbound:
            self.note[i] = self.unbound[source]
        for _ in range(50 if source in self.sockets else 0):
            try:
                self.sockets[source].sendto(data, (destination, 0))
                break
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.ENOBUFS):
                    self.receive(0.001)
                    continue
                if self.note[i] == "-":
                    self.note[i] = "err:" + (errno.errorcode.get(e.errno) or str(e.errno))
                break
        self.sent[i] += 1
        now = time.monotonic()
        self.stamps[number] = now
        if k == self.count - 1:
            self.deadline[i] = now + self.wait

    def settle(self, i):
        if self.finished[i]:
            return
        self.finished[i] = True
        self.open -= 1
        avg = "%d" % (self.rtt[i] / self.got[i] * 1e6) if self.got[i] else "-"
        self.out.append("r %d %d %d %s %s" % (self.cells[i][0], self.sent[i], self.got[i], avg, self.note[i]))

    def take(self, data, now):
        if len(data) < 20:
            return
        ihl = (data[0] & 0x0F) * 4
        sender = socket.inet_ntoa(data[12:16])
        icmp = data[ihl:]
        if len(icmp) < 8:
            return
        kind, code, _, ident, seq = struct.unpack("!BBHHH", icmp[:8])
        if kind == ICMP_REPLY:
            number = self.number_of(ident, seq, icmp[8:])
            if number is None:
                return
            i = number // self.count
            if sender != self.cells[i][2]:
                self.note[i] = "from:" + sender
                return
            started = self.stamps.pop(number, None)
            if started is None or self.finished[i]:
                return
            self.got[i] += 1
            self.rtt[i] += now - started
            if self.got[i] == self.count:
                self.settle(i)
        elif len(icmp) >= 8 + 20 + 8:
            inner = icmp[8:]
            inner_ihl = (inner[0] & 0x0F) * 4
            echo = inner[inner_ihl : inner_ihl + 8]
            if len(echo) < 8 or echo[0] != ICMP_ECHO:
                return
            ident, seq = struct.unpack("!HH", echo[4:8])
            offset = (ident - self.base) & 0xFFFF
            number = (offset << 16) | seq
            if number >= len(self.cells) * self.count:
                return
            i = number // self.count
            if socket.inet_ntoa(inner[16:20]) == self.cells[i][2] and self.note[i] == "-":
                self.note[i] = "unreach:%d:%s" % (code, sender) if kind == ICMP_UNREACH else "ttl:%s" % sender

    def receive(self, timeout):
        ready, _, _ = select.select(list(self.sockets.values()), [], [], max(0.0, timeout))
        now = time.monotonic()
        for s in ready:
            for _ in range(256):
                try:
                    data = s.recv(2048)
                except OSError:
                    break
                self.take(data, now)

    def expire(self, now):
        for i, at in enumerate(self.deadline):
            if at is not None and at <= now and not self.finished[i]:
                self.settle(i)

    def flush(self):
        if self.out:
            sys.stdout.write("\n".join(self.out) + "\n")
            sys.stdout.flush()
            self.out = []

    def run(self):
        start = time.monotonic()
        sent = 0
        for k in range(self.count):
            round_start = start + k * self.gap
            while time.monotonic() < round_start:
                self.receive(round_start - time.monotonic())
                self.flush()
            for i in range(len(self.cells)):
                if self.finished[i]:
                    continue
                self.send(i, k)
                sent += 1
                if sent % BURST == 0:
                    # Paced: at most RATE echoes a second, reading replies while it waits.
                    self.receive(max(0.0, start + sent / RATE - time.monotonic()))
                    self.flush()
        while self.open > 0:
            now = time.monotonic()
            self.expire(now)
            self.flush()
            pending = [at for i, at in enumerate(self.deadline) if at is not None and not self.finished[i]]
            if not pending:
                break
            self.receive(min(pending) - now)
        self.flush()


def main():
    count, gap_ms, wait_ms = (int(a) for a in sys.argv[1:4])
    cells = read_cells(sys.stdin)
    Prober(cells, count, gap_ms / 1000.0, wait_ms / 1000.0).run()
    sys.stdout.write("done\n")


if __name__ == "__main__":
    main()
