#!/usr/bin/env python3
"""lockcheck's Python reference plug-in: seed 000's lease ("Consensus on
Cassandra") over the DataStax/Apache Python driver (cassandra-driver), as
published, flaw included:

    CREATE TABLE leases (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180
    acquire  INSERT INTO leases (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?
    renew    UPDATE leases USING TTL ? SET owner = ? WHERE name = ? IF owner = ?
    release  DELETE FROM leases WHERE name = ? IF owner = ?

It speaks lockcheck's JSON-lines protocol on stdin/stdout (docs/plugin.md);
its environment names the cluster (LOCKCHECK_HOSTS, LOCKCHECK_KEYSPACE,
LOCKCHECK_TTL_MS). Logs go to stderr, which lockcheck writes to the run's log.
"""

import json
import logging
import os
import random
import sys
import time

from cassandra import ConsistencyLevel, OperationTimedOut, Unavailable, WriteTimeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import DCAwareRoundRobinPolicy, FallthroughRetryPolicy, TokenAwarePolicy

log = logging.getLogger("python-lease")


class Unknown(Exception):
    """The outcome of an LWT is unknown (CAS timeout, client time-out)."""


class Lease:
    def __init__(self):
        hosts = [h.strip() for h in os.environ["LOCKCHECK_HOSTS"].split(",") if h.strip()]
        port = int(hosts[0].rsplit(":", 1)[1]) if ":" in hosts[0] else 9042
        self.ks = os.environ["LOCKCHECK_KEYSPACE"]
        ttl_ms = int(os.environ["LOCKCHECK_TTL_MS"])
        self.ttl = max(1, -(-ttl_ms // 1000))  # CQL TTLs are whole seconds: round up
        # Cassandra stores expiry in whole seconds, so a cell may expire up
        # to a second early: the grant is valid for the TTL less a margin.
        self.valid = self.ttl - 1.0 - self.ttl / 10.0
        # No driver retries: a retried Paxos round that may have applied can
        # see its own write and report "not applied".
        profile = ExecutionProfile(
            consistency_level=ConsistencyLevel.QUORUM,
            serial_consistency_level=ConsistencyLevel.SERIAL,
            retry_policy=FallthroughRetryPolicy(),
            load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
            request_timeout=10,
        )
        self.cluster = Cluster([h.rsplit(":", 1)[0] for h in hosts], port=port, protocol_version=5,
                               execution_profiles={EXEC_PROFILE_DEFAULT: profile})
        self.session = self.cluster.connect()

    def setup(self, deadline):
        self.session.execute(
            f"CREATE TABLE IF NOT EXISTS {self.ks}.leases (name text PRIMARY KEY, owner text, value text)"
            " WITH default_time_to_live = 180", timeout=max(1.0, deadline - time.monotonic()))
        t = f"{self.ks}.leases"
        self.insert = self.session.prepare(f"INSERT INTO {t} (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?")
        self.renew = self.session.prepare(f"UPDATE {t} USING TTL ? SET owner = ? WHERE name = ? IF owner = ?")
        self.delete = self.session.prepare(f"DELETE FROM {t} WHERE name = ? IF owner = ?")
        self.holder = self.session.prepare(f"SELECT owner FROM {t} WHERE name = ?")

    def lwt(self, stmt, args, deadline):
        left = deadline - time.monotonic()
        if left <= 0.05:
            raise TimeoutError("no time left")
        try:
            row = self.session.execute(stmt, args, timeout=left).one()
        except (WriteTimeout, OperationTimedOut, NoHostAvailable) as e:
            raise Unknown(str(e)) from e
        except Exception as e:
            # "CAS operation result is unknown" arrives as a server error.
            if "unknown" in str(e).lower():
                raise Unknown(str(e)) from e
            raise
        return row

    def acquire(self, name, owner, deadline, received):
        """Polls until granted or the deadline; returns the lease in ms
        counted from received, or raises."""
        pending = None  # the last unknown outcome, while unsettled
        poll = 0.005
        while True:
            start = time.monotonic()
            try:
                if not self.held_by_other(name, owner, deadline):
                    row = self.lwt(self.insert, (name, owner, self.ttl), deadline)
                    if row[0]:
                        return self.lease_ms(start, received)
                    if row.owner == owner:
                        # An earlier attempt of ours applied after all: renew
                        # it, so that the lease counts from now.
                        start = time.monotonic()
                        row = self.lwt(self.renew, (self.ttl, owner, name, owner), deadline)
                        if row[0]:
                            return self.lease_ms(start, received)
            except Unknown as e:
                pending = e
            except TimeoutError:
                break
            except NoHostAvailable as e:
                # Connection errors: the request may have gone out.
                pending = Unknown(str(e))
            except Unavailable as e:
                log.info("acquire %s: attempt failed: %s", name, e)
            left = deadline - time.monotonic()
            if left <= 0.1:
                break
            time.sleep(min(random.uniform(0, poll), left - 0.1))
            poll = min(poll * 2, 0.25)
        if pending is not None:
            self.cleanup(name, owner)
            raise Unknown(f"gave up with an attempt unsettled: {pending}")
        raise LookupError("not acquired before the deadline")

    def held_by_other(self, name, owner, deadline):
        try:
            row = self.session.execute(self.holder, (name,), timeout=max(0.05, deadline - time.monotonic())).one()
        except Exception:
            return False  # a failed read says nothing: try the LWT
        return row is not None and row.owner not in (None, "", owner)

    def lease_ms(self, start, received):
        return max(1, int((start + self.valid - received) * 1000))

    def cleanup(self, name, owner):
        try:
            self.session.execute(self.delete, (name, owner), timeout=3)
        except Exception as e:
            log.info("cleanup of %s after an unknown acquire: %s", name, e)

    def release(self, name, owner, deadline):
        row = self.lwt(self.delete, (name, owner), deadline)
        return bool(row[0])


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    lease = None
    for line in iter(sys.stdin.readline, ""):
        received = time.monotonic()
        req = json.loads(line)
        rid, op = req["id"], req["op"]
        deadline = received + req.get("timeout_ms", 10000) / 1000.0
        reply = {"id": rid, "type": "ok"}
        try:
            if op == "setup":
                lease = Lease()
                lease.setup(deadline)
            elif op == "acquire":
                reply["lease_ms"] = lease.acquire(req["lock"], req["owner"], deadline, received)
            elif op == "release":
                if not lease.release(req["lock"], req["owner"], deadline):
                    reply = {"id": rid, "type": "fail", "error": "not held"}
            else:
                reply = {"id": rid, "type": "fail", "error": f"unknown op {op}"}
        except Unknown as e:
            reply = {"id": rid, "type": "info", "error": str(e)}
        except (LookupError, TimeoutError, Unavailable) as e:
            # Nothing was applied: a miss, or refused before Paxos began.
            reply = {"id": rid, "type": "fail", "error": str(e) or type(e).__name__}
        except Exception as e:
            # Anything else may have reached the cluster.
            reply = {"id": rid, "type": "info" if op != "setup" else "fail", "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    if lease is not None:
        lease.cluster.shutdown()


if __name__ == "__main__":
    main()
