"""Settings of the engine, grouped by concern like kopf's `OperatorSettings`.

Every knob is a field with a documented default; a settings object is passed
explicitly (keyword argument) to whatever needs it, never read from a global, so a
test changes one field (a watch timeout, a lease duration) instead of patching code.
Times are in seconds. Defaults follow client-go and controller-runtime where they have
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WatchingSettings:
    #: `timeoutSeconds` of each watch request: the server ends the stream after it and
    #: the informer resumes from the last resourceVersion (client-go picks 5-10 min)
    server_timeout: float = 300.0
    #: the client gives up on a stream that stays silent this long (longer than the server's)
    client_timeout: float = 330.0
    #: TCP connect and TLS handshake limit for every request
    connect_timeout: float = 30.0
    #: ask for BOOKMARK events, so resuming after a quiet period does not start from far back
    allow_bookmarks: bool = True
    #: page size of the initial list (0: one unpaginated list)
    list_page_size: int = 500
    #: first delay before reconnecting after an error; doubles per consecutive error
    reconnect_backoff: float = 0.5
    #: the longest delay between reconnection attempts
    reconnect_backoff_max: float = 30.0
    #: drop `metadata.managedFields` from cached objects (nobody reads them from a cache, and they are often a
    #: third of an object; a write of a cached object without them keeps the stored ones, as the API defines)
    strip_managed_fields: bool = True


@dataclass(frozen=True)
class QueueingSettings:
    #: per-item exponential backoff: `base_delay * 2**failures`, capped at `max_delay`
    base_delay: float = 0.005
    max_delay: float = 1000.0
    #: the global token bucket every rate-limited requeue also goes through
    qps: float = 10.0
    burst: int = 100
    #: concurrent reconciles per controller (never two on one key)
    workers: int = 2
    #: on shutdown, how long reconciles in flight may take to finish before they are cancelled
    drain_timeout: float = 10.0


@dataclass(frozen=True)
class ResyncSettings:
    #: every period, each controller enqueues every primary object again (None: never)
    period: float | None = None


#: client-go's `JitterFactor`: a renewal is retried up to this many retry periods late
JITTER_FACTOR = 1.2


@dataclass(frozen=True)
class LeaderElectionSettings:
    #: the `coordination.k8s.io/v1` Lease that names the leader
    lease_name: str
    lease_namespace: str
    #: this candidate's name in the Lease (empty: hostname plus a random suffix)
    identity: str = ""
    #: how long a lease holds after its last renewal, as observed by the other candidates
    lease_duration: float = 15.0
    #: the leader steps down when it could not renew for this long
    renew_deadline: float = 10.0
    #: how often candidates try to acquire, and the leader renews
    retry_period: float = 2.0
    #: on shutdown, clear the Lease so a standby takes over at once instead of after `lease_duration`
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        """Refuse timings that would let two replicas lead at once (client-go's checks)."""
        ref = f"leader election on {self.lease_namespace}/{self.lease_name}"
        if self.retry_period <= 0:
            raise ValueError(f"{ref}: retry_period must be positive, not {self.retry_period:g} s")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"{ref}: renew_deadline ({self.renew_deadline:g} s) must exceed {JITTER_FACTOR:g} x retry_period "
                f"({self.retry_period:g} s): the leader retries a failed renewal every retry_period before "
                "it gives up"
            )
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"{ref}: lease_duration ({self.lease_duration:g} s) must exceed renew_deadline "
                f"({self.renew_deadline:g} s): a leader must know it lost before a standby may take over, "
                "and the difference is the time it has to stop its work"
            )


@dataclass(frozen=True)
class ServerSettings:
    """The manager's HTTP endpoint: /healthz, /readyz, /metrics."""

    host: str = "0.0.0.0"
    #: 0: any free port (see `HealthServer.port`)
    port: int = 8080


@dataclass(frozen=True)
class Settings:
    watching: WatchingSettings = field(default_factory=WatchingSettings)
    queueing: QueueingSettings = field(default_factory=QueueingSettings)
    resync: ResyncSettings = field(default_factory=ResyncSettings)
    #: None: no election, every replica runs its controllers
    leader_election: LeaderElectionSettings | None = None
    #: None: no HTTP endpoint
    server: ServerSettings | None = field(default_factory=ServerSettings)
