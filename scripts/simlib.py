"""What the simulators (scripts/simulate.py, scripts/simulate_rec.py) share:
errors and settings from the environment, progress lines, a minimal Redis
client (RESP over a socket) and one keep-alive HTTP connection to nginx.
Python 3 standard library only."""

import asyncio
import json
import os
import socket
import sys
import traceback


def fail(why):
    """An error, not a missed target: exit status 2 (1 means targets missed)."""
    print(f'error: {why}', file=sys.stderr)
    sys.exit(2)


def final_verdict(failures, passed):
    """The last line: FAIL with what failed (exit status 1), or PASS with
    passed (0)."""
    if failures:
        print('\nFAIL: ' + '; '.join(failures))
        return 1
    print(f'\nPASS: {passed}')
    return 0


def run(main):
    """Exits with main()'s status; a bug or a broken stack is an error (2),
    never a missed target."""
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception:
        traceback.print_exc()
        sys.exit(2)


def env_num(name, default, kind=float, lo=None, hi=None):
    raw = os.environ.get(name, '')
    if raw == '':
        return default
    try:
        v = kind(raw)
    except ValueError:
        fail(f'{name}={raw!r} is not a number')
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        fail(f'{name}={raw} is out of range ({lo}..{hi})')
    return v


def interval_seconds(name, default):
    raw = os.environ.get(name, default)
    if raw.endswith('ms'):
        return float(raw[:-2]) / 1000
    if raw.endswith('s'):
        return float(raw[:-1])
    return float(raw)


def say(msg=''):
    print(msg, file=sys.stderr, flush=True)


class Redis:
    """RESP over a socket: commands pipelined, replies decoded as text."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        self.file = self.sock.makefile('rb')

    def send(self, *cmds):
        out = []
        for cmd in cmds:
            out.append(b'*%d\r\n' % len(cmd))
            for a in cmd:
                a = a if isinstance(a, bytes) else str(a).encode()
                out.append(b'$%d\r\n%s\r\n' % (len(a), a))
        self.sock.sendall(b''.join(out))
        return [self.read() for _ in cmds]

    def cmd(self, *args):
        return self.send(args)[0]

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b'+':
            return rest.decode()
        if kind == b'-':
            raise RuntimeError('redis: ' + rest.decode())
        if kind == b':':
            return int(rest)
        if kind == b'$':
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2].decode()
        if kind == b'*':
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f'redis: unexpected reply {line!r}')


class Conn:
    """One keep-alive connection to nginx on port, requests one at a time."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None
        self.pid = None
        self.requests = 0

    async def open(self):
        """Connects; the worker's /app/v0/status (its pid kept), or {}."""
        self.reader, self.writer = await asyncio.open_connection('127.0.0.1', self.port)
        self.writer.get_extra_info('socket').setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        st, body = await self.request(b'GET /app/v0/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
        status = json.loads(body) if st == 200 else {}
        self.pid = status.get('pid')
        return status

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, raw):
        for attempt in (0, 1):
            try:
                if self.writer is None:
                    await self.open()
                self.writer.write(raw)
                head = await self.reader.readuntil(b'\r\n\r\n')
                lines = head.split(b'\r\n')
                status = int(lines[0].split(b' ', 2)[1])
                n, close = 0, False
                for line in lines[1:]:
                    k, _, v = line.partition(b':')
                    k = k.strip().lower()
                    if k == b'content-length':
                        n = int(v)
                    elif k == b'connection' and v.strip().lower() == b'close':
                        close = True
                    elif k == b'transfer-encoding':
                        raise RuntimeError('chunked responses are not expected')
                body = await self.reader.readexactly(n) if n else b''
                self.requests += 1
                if close:          # keepalive_requests reached: a new one next time
                    self.close()
                return status, body
            except (ConnectionError, asyncio.IncompleteReadError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError('unreachable')
