package scenario

import (
	"strings"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
)

// SchemaVersion is the version of the result.json layout. Version 2 renamed
// series.confirmed (basic.acks received) to series.acked, so "confirmed"
// means only acked and delivered (metrics.Counts.Confirmed). Version 3 added
// MigratedFrom and NotRecorded: a reader that upgrades an older file
// (reports.Decode reads versions 1 and 2) marks the fields that file lacked
// instead of passing zeros off as measurements.
const SchemaVersion = 3

// Status is a verdict's outcome.
type Status string

const (
	Pass         Status = "pass"
	Fail         Status = "fail"         // an expectation failed: durability broken or a limit exceeded
	Inconclusive Status = "inconclusive" // the run could not measure what it set out to (broker not back, drain deadline, interrupted)
)

// Verdict is a judgement with the reasons for it, one sentence each.
type Verdict struct {
	Status  Status   `json:"status"`
	Reasons []string `json:"reasons,omitempty"`
}

// Result is everything one `rmqtorture run` of one scenario measured; it is
// written as result.json and rendered by the reports package.
type Result struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`   // rmqtorture version
	Client        string `json:"client"` // AMQP client library and version
	Scenario      string `json:"scenario"`
	Description   string `json:"description,omitempty"`
	File          string `json:"file"`
	Command       string `json:"command"`
	RunID         string `json:"run_id"`
	Image         string `json:"image"`
	BrokerVersion string `json:"broker_version,omitempty"` // as the broker reports it (server-properties)
	Container     string `json:"container"`
	// Engine is the container engine the run acted through, as found
	// (DOCKER_HOST, a Docker context, the local socket) with any password
	// masked, and the product and version it reports: "unix:///var/run/docker.sock
	// (Docker Engine - Community 28.5.2)", "ssh://ci@host (Podman Engine
	// 5.4.2)". Absent with --uri (no engine) and in results written before it.
	Engine string `json:"engine,omitempty"`
	// BrokerFeatures are the broker's feature flags and deprecated
	// features as it listed them, recorded in a run of several images
	// (--images), where behaviour is compared by version: what a version
	// permits is measured on its image, not taken from its release notes.
	// Absent otherwise, and in results written before it existed.
	BrokerFeatures *BrokerFeatures `json:"broker_features,omitempty"`
	// Nodes is the cluster's size (omitted for a single broker) and
	// NodeContainers its containers by node (node 1 first).
	Nodes          int       `json:"nodes,omitempty"`
	NodeContainers []string  `json:"node_containers,omitempty"`
	QueueType      QueueType `json:"queue_type"`
	Topology       string    `json:"topology"` // queue and message settings, or the matrix, in words
	Messages       int       `json:"messages"`
	// Seed drove the run's random choices (fault jitter); `run --seed` with
	// it replays them.
	Seed        uint64       `json:"seed"`
	StartedAt   time.Time    `json:"started_at"`
	DurationMS  float64      `json:"duration_ms"`
	Modes       []ModeResult `json:"modes"` // one per mode, or per mode and matrix cell
	Verdict     Verdict      `json:"verdict"`
	Interrupted bool         `json:"interrupted,omitempty"`
	Error       string       `json:"error,omitempty"`
	// URI is the broker --uri named, its password redacted ("xxxxx"):
	// rmqtorture neither started it nor injected any fault into it
	// (absent: a broker container rmqtorture started or was named).
	URI string `json:"uri,omitempty"`
	// FaultsInjected is false when rmqtorture injected no fault: a broker
	// named with --uri, which it only publishes to, drains and judges;
	// any fault came from outside the tool. Absent: the scenario's fault
	// steps ran as planned.
	FaultsInjected *bool `json:"faults_injected,omitempty"`
	// LoadPart, set by run --load-only or --drain-only, says which share
	// of a run split across processes this result holds: its verdict is
	// the part's own (did it publish its ids, did it drain), and the
	// run's is what `rmqtorture check` gives over every part's folder.
	LoadPart *metrics.Part `json:"load_part,omitempty"`
	// Warnings are what the run was told but did not check, e.g. an
	// expectation for a mode that --mode left out.
	Warnings []string `json:"warnings,omitempty"`
	// BrokerConfig and BrokerAdvancedConfig are the scenario's
	// broker.config and broker.advanced_config as written into the broker
	// container before its first start (absent: none).
	BrokerConfig         map[string]string `json:"broker_config,omitempty"`
	BrokerAdvancedConfig map[string]int    `json:"broker_advanced_config,omitempty"`
	// BrokerLogFindings are the known loss signatures found in the broker's
	// log over the run (e.g. a classic queue's recovery after an unclean
	// shutdown, rabbitmq-server#13390), in the scanner's table order.
	BrokerLogFindings []BrokerLogFinding `json:"broker_log_findings,omitempty"`
	// MigratedFrom is the schema_version of the file this result was read
	// from when reports.Decode upgraded an older layout; 0 (absent) for a
	// result written by this version.
	MigratedFrom int `json:"migrated_from,omitempty"`
	// NotRecorded lists the fields an older file lacked because the
	// rmqtorture that wrote it predates them, as JSON pointers (RFC 6901)
	// such as "/seed" or "/modes/0/confirm_latency_ms/p99_9": they hold 0
	// and mean unknown. Empty for a result written by this version.
	NotRecorded []string `json:"not_recorded,omitempty"`
	// VersionScope is the version scope of the scenario's expect that
	// judged this run (absent: the scenario states none).
	VersionScope *AppliedVersionScope `json:"version_scope,omitempty"`
}

// BrokerLogFinding is one known signature found in the broker's log: lines
// the field has tied to lost or damaged messages.
type BrokerLogFinding struct {
	Signature string `json:"signature"` // short name, e.g. "restarting-crashed-queue"
	Meaning   string `json:"meaning"`   // what it means, citing the public report
	Count     int    `json:"count"`     // matching lines
	FirstLine string `json:"first_line"`
	// Messages is what the matching lines say the broker dropped, summed
	// (signatures that carry a count only; 0 otherwise).
	Messages int `json:"messages,omitempty"`
}

// ModeResult is one publishing mode's burst, fault, drain and reconciliation.
// The embedded Counts are the ledger classes (see metrics.Counts).
type ModeResult struct {
	Mode   Mode   `json:"mode"`
	Cell   *Cell  `json:"cell,omitempty"`    // matrix runs: queue type, persistence, repeat
	NotRun bool   `json:"not_run,omitempty"` // skipped: interrupted, or the broker was gone
	Queue  string `json:"queue"`
	Window int    `json:"window,omitempty"` // unconfirmed messages allowed in flight; 1 for confirm-each, 0 for fire-and-forget
	// ByNode counts, per cluster node, the publishers' connections and what
	// went through them (omitted for a single broker).
	ByNode []NodeCount `json:"by_node,omitempty"`

	metrics.Counts
	// LostAllowed: transient messages, a non-durable queue, or a queue
	// that discards messages by design, so lost confirmed messages are
	// counted but fail nothing.
	LostAllowed bool `json:"lost_allowed,omitempty"`
	// LostAllowedReason names why (LossReason labels, comma-separated:
	// TTL, drop-head, non-durable queue, transient messages); the notes
	// say it in full.
	LostAllowedReason string `json:"lost_allowed_reason,omitempty"`
	// DeadLetterQueue is the dead-letter queue drained after the burst
	// (queue.dead_letter_queue); dead_lettered counts the ids found there.
	DeadLetterQueue string `json:"dead_letter_queue,omitempty"`
	// DeadLetterLossAllowed: confirmed messages lost on the dead-letter
	// path fail nothing (the queue dead-letters at most once, or the
	// scenario allows it); DeadLetterGuarantee says what the queue
	// promises on that path, with its source. Both are set only when the
	// queue dead-letters confirmed messages into its dead-letter queue.
	DeadLetterLossAllowed bool   `json:"dead_letter_loss_allowed,omitempty"`
	DeadLetterGuarantee   string `json:"dead_letter_guarantee,omitempty"`

	// PublishRate is publish calls that returned without error per second, from
	// the first publish to the last (downtime included).
	PublishRate float64 `json:"publish_rate_msgs_per_s"`
	// PreFaultPublishRate is the same rate up to the first fault: the mode's
	// undisturbed speed.
	PreFaultPublishRate float64 `json:"pre_fault_publish_rate_msgs_per_s"`
	// AbsorbedRate (fire-and-forget) is how fast messages actually entered the
	// queue, from queue-depth polls before the first fault, in msg/s.
	AbsorbedRate float64 `json:"absorbed_rate_msgs_per_s,omitempty"`
	// IntakeRate is what the broker took in per second over the burst's
	// fault-free time (from its start to the first fault, or to the last
	// confirm without one), in msg/s: basic.acks in the confirm modes (the
	// broker has the message: on disk, or on a majority for a quorum
	// queue), the queue's depth in fire-and-forget (AbsorbedRate). It is
	// the mode's cost figure, where PublishRate counts calls that may only
	// have reached the client's socket buffer. 0 with IntakeUnknown set
	// when the run cannot support one.
	IntakeRate float64 `json:"intake_rate_msgs_per_s,omitempty"`
	// IntakeUnknown says why there is no IntakeRate: too little taken in
	// before the fault to time, a confirm window that never filled and
	// drained before it, an intake nobody observed.
	IntakeUnknown string `json:"intake_unknown,omitempty"`
	// ConfirmRate is basic.acks per second from the first publish to the last ack.
	ConfirmRate    float64                `json:"confirm_rate_msgs_per_s,omitempty"`
	ConfirmLatency metrics.LatencySummary `json:"confirm_latency_ms"`
	// ConfirmLatencyIntended (load.rate or load.burst runs only) is confirm latency
	// measured from each order's intended send time on the rate or burst
	// schedule rather than from its publish call: it is not fooled by a
	// publisher that was held up (coordinated omission).
	ConfirmLatencyIntended *metrics.LatencySummary `json:"confirm_latency_from_intended_ms,omitempty"`
	// Series is the burst in time buckets (bucket_ms wide, from the burst
	// start through the drain): counts per bucket, in flight at each bucket's
	// end, broker state.
	Series *metrics.SeriesData `json:"series,omitempty"`
	// BrokerDowntimeMS is the first fault's downtime as observed, in ms: for
	// an action that takes the broker down (kill, stop, restart, pause,
	// disconnect, quorum-loss) fault → AMQP login accepted again; for any
	// other step (a command, a partition, a rolling restart) the time a
	// publisher was without a connection (lost → connected again). null when
	// nothing went down, no publisher lost its connection, or it did not
	// come back.
	BrokerDowntimeMS *float64 `json:"broker_downtime_ms"`
	// ClientRecoveryMS is fault → first publish (fire-and-forget) or first
	// confirm after the publisher reconnected, in ms; null when the publisher
	// had nothing left to publish after the fault or never recovered.
	ClientRecoveryMS *float64 `json:"client_recovery_ms"`
	BurstMS          float64  `json:"burst_ms"`
	Reconnects       int      `json:"reconnects"`
	// BlockedMS is how long the broker held the publisher blocked
	// (connection.blocked, e.g. a memory alarm), in ms; it is reported apart
	// from confirm latency, which includes it.
	BlockedMS float64 `json:"blocked_ms"`
	// Stalls counts client stalls: connected, nothing published or confirmed
	// for load.stall_timeout. A stall is never counted as loss.
	Stalls int `json:"stalls"`
	// ChannelCloses are the broker's reasons for closing the publisher's
	// channels or connections, with reply code and text, or how a
	// connection was lost (and under which broker fault).
	ChannelCloses []string `json:"channel_closes,omitempty"`
	// DrainedBodyBytes is the smallest and largest body the drain received
	// from the queue under test, in bytes (null when it received none): what
	// the broker stored, to read against load.message_size_bytes.
	DrainedBodyBytes *ByteRange `json:"drained_body_bytes,omitempty"`
	// DeadLetterReasons counts the ids taken from the dead-letter queue by
	// the reason of their latest x-death entry: delivery_limit (the
	// broker's delivery limit), rejected (a consumer rejected it), expired,
	// maxlen, none (no x-death: a copy an application published itself),
	// or parked (on_delivery: retry: the consumer published the copy there
	// with the headers it had, so its x-death is the retry queue's);
	// https://www.rabbitmq.com/docs/dlx#effects. XDeathCounts counts them
	// by that entry's count (times dead-lettered from that queue for that
	// reason). Absent when nothing was dead-lettered.
	DeadLetterReasons map[string]int `json:"dead_letter_reasons,omitempty"`
	XDeathCounts      map[string]int `json:"x_death_counts,omitempty"`

	// Consumers is what the live consumers measured (null without them).
	Consumers *ConsumerStats `json:"consumers,omitempty"`

	Faults []FaultRecord `json:"faults,omitempty"`
	// PartitionedAtDrain (clusters) is what the nodes reported as
	// partitioned when the drain began, by Erlang node name → the nodes it
	// saw partitioned from it (rabbitmqctl cluster_status; see
	// https://www.rabbitmq.com/docs/partitions#detecting); absent when no
	// node did. A partition that outlived the faults is a finding about
	// the broker (rabbitmq-server#17319).
	PartitionedAtDrain map[string][]string `json:"partitioned_at_drain,omitempty"`
	IDs                metrics.IDSets      `json:"ids"`
	Events             []metrics.Event     `json:"events"`

	Notes   []string `json:"notes,omitempty"` // facts worth knowing that do not change the verdict
	Verdict Verdict  `json:"verdict"`
	// Checks are the judge's checks on this burst, each with its findings,
	// in the order of the judge's table; Verdict is their sum
	// (VerdictOf). Set where the burst was judged, for the run's JUnit
	// report; not in result.json (its verdict's reasons are), so nil in a
	// result read back from a file and in a burst that was never judged
	// (not run, its verdict set by the run).
	Checks []CheckOutcome `json:"-"`
	Error  string         `json:"error,omitempty"`
	// History is the file name, relative to the run folder, of this burst's
	// recorded history (see metrics.HistoryWriter); empty when none was kept.
	History string `json:"history,omitempty"`
	// RemovedByScenario counts the lost ids (confirmed, never delivered)
	// that the scenario's own delete-queue or purge-queue step removed:
	// first published before that step returned. They are part of Lost and
	// allowed: not durability loss.
	RemovedByScenario int `json:"removed_by_scenario,omitempty"`
	// Process is rmqtorture's own process right after the mode finished
	// (null for a mode that did not run): read across the repeats of a
	// matrix it shows whether the tool leaks goroutines, descriptors or
	// memory (the soak test in cmd/soak_integration_test.go).
	Process *ProcessStats `json:"process,omitempty"`
	// Resources is the CPU time and peak memory rmqtorture itself used for
	// the mode (null for a mode that did not run, or where getrusage does
	// not exist).
	Resources *ResourceUse `json:"resources,omitempty"`
}

// ProcessStats is a snapshot of the rmqtorture process itself, taken after
// a garbage collection (engine.ProcessSnapshot).
type ProcessStats struct {
	// Goroutines is runtime.NumGoroutine().
	Goroutines int `json:"goroutines"`
	// OpenFDs is the number of open file descriptors (entries of
	// /proc/self/fd, the listing's own included); null where the system
	// has no /proc/self/fd.
	OpenFDs *int `json:"open_fds"`
	// HeapInuseBytes is runtime.MemStats.HeapInuse after runtime.GC(), in
	// bytes: the heap spans in use, live objects and their fragmentation.
	HeapInuseBytes uint64 `json:"heap_inuse_bytes"`
}

// FaultRecord is one fault as it happened.
type FaultRecord struct {
	Action      Action  `json:"action"`
	Signal      string  `json:"signal,omitempty"`
	Trigger     string  `json:"trigger"`
	AtMS        float64 `json:"at_ms"`        // trigger fired, ms since burst start
	AtPublished int     `json:"at_published"` // ids published when the trigger fired
	// InjectMS is when the fault took effect, in ms after its trigger: the
	// start of its call for an action whose effect begins during the call
	// (kill, stop, restart: 0; streadway/amqp#421), else the end of its
	// call (the Docker API call); publishers keep going meanwhile, as they
	// would in production.
	InjectMS          float64 `json:"inject_ms"`
	PublishedAtInject int     `json:"published_at_inject"` // ids published when the fault took effect
	// InFlightAtInject is how many ids awaited their publisher confirm
	// (or transaction commit) when the fault took effect: published, not
	// yet basic.ack'd, basic.nack'd, returned or in doubt. 0 in
	// fire-and-forget, which awaits nothing. With PublishedAtInject equal
	// to the burst's size it says the fault found nothing under way.
	// Absent (nil) in results written before it was recorded.
	InFlightAtInject *int `json:"in_flight_at_inject,omitempty"`
	// AckedAtInject (confirm modes) is how many basic.acks (transactional:
	// messages of committed transactions) the publishers had received when
	// the fault took effect: the broker's intake up to then. Absent in
	// fire-and-forget and in results written before it was recorded.
	AckedAtInject *int    `json:"acked_at_inject,omitempty"`
	DownMS        float64 `json:"down_ms"` // planned downtime before the start
	// CallMS is how long the fault's call took (the Docker API call,
	// rabbitmqctl), in ms; 0 for client-side faults.
	CallMS float64 `json:"call_ms,omitempty"`
	// Firing is which firing of a repeating step this is (1-based; 0 for a
	// step that fires once).
	Firing int `json:"firing,omitempty"`
	// JitterMS is the random delay drawn from the seed before the step
	// ran, in ms.
	JitterMS float64 `json:"jitter_ms,omitempty"`
	// UnackedAtCrash (crash-consumer) is how many processed deliveries the
	// crashed consumer left unacknowledged.
	UnackedAtCrash int    `json:"unacked_at_crash,omitempty"`
	Error          string `json:"error,omitempty"`
	// Recovery times each step back from the fault (nil for recovery steps
	// and faults that were never applied).
	Recovery *Recovery `json:"recovery,omitempty"`
	// RemovedMessages (delete-queue, purge-queue) is the message count the
	// broker reported removing (queue.delete-ok / queue.purge-ok).
	RemovedMessages *int `json:"removed_messages,omitempty"`
	// PublishedBefore (delete-queue, purge-queue) are the ids first
	// published before the step returned: the only ones it can have
	// removed. Held for the verdict (Result.RemovedByScenario), not written.
	PublishedBefore []metrics.Range `json:"-"`
	// Target is what the step acted on, resolved when it fired on a
	// cluster: "leader of q (rmq1)", "node rmq2", "all"; "broker" on a
	// single broker.
	Target string `json:"target,omitempty"`
	// Nodes are the cluster nodes the step acted on, by name.
	Nodes []string `json:"nodes,omitempty"`
	// Sides (partition) are the sides the step cut apart: "rmq1 | rmq2, rmq3".
	Sides string `json:"sides,omitempty"`
	// LeaderBefore is the node leading the queue under test when the step
	// fired. LeaderAfter, for a step that acted on that leader, is the
	// first leader seen after it: elected on the survivors, or, after a
	// quorum loss, whoever leads once a majority is back, which may be
	// LeaderBefore again ("" when none was seen, when the step left the
	// leader alone, or on a single broker).
	LeaderBefore string `json:"leader_before,omitempty"`
	LeaderAfter  string `json:"leader_after,omitempty"`
	// NodeRecoveries (rolling-restart) time each node the step restarted,
	// in the order restarted: one Recovery cannot hold them (the first
	// node's times said nothing of a 66 s restart of three).
	NodeRecoveries []NodeRecovery `json:"node_recoveries,omitempty"`
	// ConfirmsThroughNodes (partition) are the probes sent once the
	// partition healed, one through each node, in node order: when its
	// publisher confirm came, or why none did. Whole again means a
	// confirm goes through every node.
	ConfirmsThroughNodes []NodeConfirm `json:"confirms_through_nodes,omitempty"`
	// QuorumLoss (quorum-loss, and any step that left no majority) is what
	// the broker did with the publishes made while a majority was down.
	QuorumLoss *QuorumLossOutcome `json:"quorum_loss,omitempty"`
	// Commands (command) are the step's commands as they ran: its inject
	// command, then its recover command.
	Commands []CommandRun `json:"commands,omitempty"`
	// State (command) is the broker state the step's state said its
	// commands leave, marked in the series until AMQP logins succeed
	// again ("": none).
	State metrics.BrokerState `json:"state,omitempty"`
	// PowerLoss (power-loss) is what the power cut dropped on each target
	// node and whether its control files prove it bit.
	PowerLoss []PowerCut `json:"power_loss,omitempty"`
}

// PowerCut is one node's power cut (power-loss): what its lazy filesystem
// dropped, and the proof that it dropped what was not synced. Before the
// kill rmqtorture writes two control files into the node's data
// directory, one fsynced (file and directory) and one not; after the cut
// the first must be there and the second gone.
type PowerCut struct {
	Node string `json:"node"` // the container
	// DroppedFiles is how many files lost data written since their last
	// fsync; DroppedBytes how many bytes (bytes) they had been written
	// since; DroppedEntries how many files and directories created and
	// never synced were removed. SyncedSinceMount counts the files and
	// directories fsynced since the mount or the previous cut.
	DroppedFiles     int   `json:"dropped_files"`
	DroppedBytes     int64 `json:"dropped_bytes"`
	DroppedEntries   int   `json:"dropped_entries"`
	SyncedSinceMount int   `json:"synced_since_mount"`
	// SyncedControlKept and UnsyncedControlDropped are the proof: the
	// synced control file holds what was written, the unsynced one does
	// not (it is gone, or empty when an fsync of the broker's committed its
	// creation but not its data). Both true, or the cut did not behave as
	// a power cut (the run is then inconclusive, never a pass).
	SyncedControlKept      bool `json:"synced_control_kept"`
	UnsyncedControlDropped bool `json:"unsynced_control_dropped"`
	// KillSentAfterMS is how long (ms) after the power-loss call began
	// its SIGKILL was sent, the control files written: the broker goes on
	// confirming until about then, so orders confirmed after the step's
	// trigger are lost too (measured: docs/power-loss.md).
	KillSentAfterMS float64 `json:"kill_sent_after_ms"`
}

// Proven reports whether the cut kept the synced control file and dropped
// the unsynced one.
func (c PowerCut) Proven() bool { return c.SyncedControlKept && c.UnsyncedControlDropped }

// NodeConfirm is one probe message published through one node after a
// partition healed: its publisher confirm came ConfirmMS after the step's
// trigger, or it did not (Error: the basic.nack, basic.return, closed
// channel or timeout).
type NodeConfirm struct {
	Node      string   `json:"node"`
	ConfirmMS *float64 `json:"confirm_ms,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// NodeRecovery is one node's restart within a step that restarts several
// one after another (rolling-restart), each time in ms after the step
// took effect: its restart call began (RestartMS) and returned with the
// container running (RunningMS), it accepted an AMQP login (AcceptingMS),
// and the queue's members were seen replicated again (CaughtUpMS; quorum
// queues only, nil otherwise) before the next node was restarted.
type NodeRecovery struct {
	Node        string   `json:"node"`
	RestartMS   float64  `json:"restart_ms"`
	RunningMS   float64  `json:"running_ms"`
	AcceptingMS float64  `json:"amqp_accepting_ms"`
	CaughtUpMS  *float64 `json:"caught_up_ms,omitempty"`
}

// CommandRun is one command of a command step as it ran. Every text in it
// has the password of any URL replaced by "xxxxx".
type CommandRun struct {
	// Step is "inject" or "recover".
	Step string `json:"step"`
	// Argv is the program and its arguments, as the scenario gave them.
	Argv []string `json:"argv"`
	// ExitCode is the command's exit status; -1 when it did not exit by
	// itself (killed at its timeout, by a signal, or never started).
	ExitCode int `json:"exit_code"`
	// DurationMS is how long it ran, in ms.
	DurationMS float64 `json:"duration_ms"`
	// Stdout and Stderr are the last CommandOutputBytes of each (UTF-8 as
	// received, terminal control sequences removed); StdoutCutBytes and
	// StderrCutBytes count the bytes dropped before them.
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	StdoutCutBytes int64  `json:"stdout_cut_bytes,omitempty"`
	StderrCutBytes int64  `json:"stderr_cut_bytes,omitempty"`
	// Error says why the command failed the step: "exit status 1",
	// "killed at its 60s timeout", "could not start: …"; "" when it
	// exited 0.
	Error string `json:"error,omitempty"`
}

// CommandOutputBytes is how much of each of a command's stdout and stderr
// a CommandRun keeps: the last 16 KiB.
const CommandOutputBytes = 16 << 10

// NodeCount is what went through one cluster node's client port.
type NodeCount struct {
	Node        string `json:"node"`        // "rmq2"
	Connections int    `json:"connections"` // publisher connections opened to it
	Publishes   int    `json:"publishes"`   // publish calls that returned without error on them
	Acked       int    `json:"acked"`       // basic.acks received on them
}

// QuorumLossOutcome is what the broker did while a majority of the nodes
// was down: from the return of the call that stopped them until the call
// that started them again, counted over the series' buckets that lie
// wholly in that span. A quorum queue confirms nothing without a majority
// (https://www.rabbitmq.com/docs/quorum-queues): its publishes wait, in
// doubt, and are confirmed once a majority is back; a basic.ack received
// while the majority was down is a false ack and fails the run.
type QuorumLossOutcome struct {
	DownMS    float64 `json:"down_ms"`   // the span counted, in ms
	Published int     `json:"published"` // publish calls made in it (republishes included)
	Acked     int     `json:"acked"`     // basic.acks received in it: must be 0
	Nacked    int     `json:"nacked"`    // basic.nacks received in it
	// Unconfirmed is how many publishes awaited a confirm when the
	// majority went down (the series' in-flight gauge then).
	Unconfirmed int `json:"unconfirmed"`
	// FirstAckAfterMS is when the first basic.ack came after the nodes were
	// started again, in ms (the start of its series bucket; null: none).
	FirstAckAfterMS *float64 `json:"first_ack_after_ms"`
}

// ByteRange is the smallest and largest of some sizes, in bytes.
type ByteRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// ConsumerStats is what live consumers measured. Histograms map a value
// (as a decimal string, JSON object keys being strings) to how many
// messages had it.
type ConsumerStats struct {
	Count      int            `json:"count"`
	Prefetch   int            `json:"prefetch"`
	AckEvery   int            `json:"ack_every"`
	OnDelivery ConsumerAction `json:"on_delivery"`
	// ProcessingDelayMS is spent on each delivery before it is settled, in ms.
	ProcessingDelayMS float64 `json:"processing_delay_ms"`
	// Deliveries is every delivery to a live consumer; RedeliveredFlagged
	// those the broker flagged redelivered.
	Deliveries         int `json:"deliveries"`
	RedeliveredFlagged int `json:"redelivered_flagged"`
	Acked              int `json:"acked"`          // deliveries settled with basic.ack
	NackedRequeue      int `json:"nacked_requeue"` // basic.nack requeue=true
	Rejected           int `json:"rejected"`       // basic.nack requeue=false (dead-lettered or dropped by the broker)
	Retried            int `json:"retried"`        // republished to the retry queue (on_delivery: retry)
	Parked             int `json:"parked"`         // republished to the dead-letter queue after max_retries
	// RetryLoopsCut (retry_count_from: x-death) counts messages whose
	// x-death count never reached max_retries: parked at
	// RetryLoopBound(max_retries) retries by the consumer's own header
	// instead (rabbitmq-server#11331). Included in Parked. Absent in results
	// written before it existed.
	RetryLoopsCut int `json:"retry_loops_cut,omitempty"`
	Crashes       int `json:"crashes"`
	// UnackedAtCrash is how many processed deliveries crashes left
	// unacknowledged: the broker hands each out again, flagged redelivered.
	UnackedAtCrash int `json:"unacked_at_crash"`
	Reconnects     int `json:"reconnects"`
	// BrokerCancels counts basic.cancel sent by the broker to a live
	// consumer (RabbitMQ's consumer cancel notification: its queue was
	// deleted, or the node holding it went down, rabbitmq-server#4613),
	// each followed by a reconnect. Absent in results written before.
	BrokerCancels int `json:"broker_cancels,omitempty"`
	// EndToEndLatency is publish call → delivery to a live consumer, in ms,
	// over every delivery (redeliveries included; a retry copy keeps the
	// original's publish time, so it includes the retry delays).
	EndToEndLatency metrics.LatencySummary `json:"end_to_end_latency_ms"`
	// DeliveriesPerMessage: deliveries to live consumers → messages
	// delivered that many times (e.g. {"4": 100}).
	DeliveriesPerMessage map[string]int `json:"deliveries_per_message,omitempty"`
	// RetriesAtPark (retry): the application's own retry header on the
	// delivery that was parked → messages.
	RetriesAtPark map[string]int `json:"retries_at_park,omitempty"`
	// XDeathCountAtPark (retry): the broker's x-death count (sum of its
	// entries' counts) on the delivery that was parked → messages. RabbitMQ
	// 4.x does not carry a client-republished x-death over, so it stays low
	// while the own header counts every retry.
	XDeathCountAtPark map[string]int `json:"x_death_count_at_park,omitempty"`
	Errors            []string       `json:"errors,omitempty"`
	// DeliveriesPerConsumer is each live consumer's deliveries, by index.
	DeliveriesPerConsumer []int `json:"deliveries_per_consumer,omitempty"`
	// ConsumerChanges counts deliveries that went to a different live
	// consumer than the delivery before (a single active consumer: once
	// per failover).
	ConsumerChanges int `json:"consumer_changes,omitempty"`
	// Held counts deliveries a consumer kept for consumers.hold before
	// settling them.
	Held int `json:"held,omitempty"`
	// GaveUp counts deliveries rejected at consumers.max_deliveries.
	GaveUp int `json:"gave_up,omitempty"`
	// ChannelCloses lists why the broker closed live consumers' channels or
	// connections, with reply code and text (e.g. "406 PRECONDITION_FAILED
	// - delivery acknowledgement on channel 1 timed out…").
	ChannelCloses []string `json:"channel_closes,omitempty"`
}

// BrokerVersionOrImage names the broker for headers: its reported version if
// known, else its image, else the URI --uri named (password redacted).
func (r *Result) BrokerVersionOrImage() string {
	switch {
	case r.BrokerVersion != "":
		return r.BrokerVersion
	case r.Image == "" && r.URI != "":
		return r.URI // named with --uri: no image
	}
	return r.Image
}

// Recovery is how the run came back from one fault, each step in ms since
// the fault was applied (the fault event), null when it did not happen
// before the next fault or the end of the run. Sources: the timeline's
// broker-started, broker-ready, connected and first-progress events, and the
// series' in-doubt backlog.
type Recovery struct {
	// ContainerRunningMS: the container started, unpaused or reconnected
	// again (restart: its call returned, with the container running).
	ContainerRunningMS *float64 `json:"container_running_ms"`
	// AMQPAcceptingMS: an AMQP login succeeded again.
	AMQPAcceptingMS *float64 `json:"amqp_accepting_ms"`
	// PublisherReconnectedMS: the publisher's next connection was open.
	PublisherReconnectedMS *float64 `json:"publisher_reconnected_ms"`
	// FirstConfirmMS: the first basic.ack or basic.nack on that connection
	// (confirm modes only).
	FirstConfirmMS *float64 `json:"first_confirm_ms"`
	// BacklogDrainedMS: from the first confirm on, the first moment no id was
	// in doubt or republished and unconfirmed (confirm modes only; null when
	// in-doubt ids were never republished).
	BacklogDrainedMS *float64 `json:"backlog_drained_ms"`
	// Clusters: LeaderElectedMS, a poll first found the queue led by a
	// node the step did not act on (null when the leader was not among its
	// targets); ReplicatedMS, every node held a member of the queue again,
	// one leader and the rest followers, and, after a partition, no node
	// reported it any more (the heal waits for that). Polls run
	// `rabbitmq-queues quorum_status` back to back: each takes about
	// 1–2 s, which bounds their resolution.
	LeaderElectedMS *float64 `json:"leader_elected_ms,omitempty"`
	ReplicatedMS    *float64 `json:"replicated_ms,omitempty"`
}

// CommandLine is argv as one line for people, each item quoted as a POSIX
// shell would need it ('a b'), with the password of any URL in it
// replaced by "xxxxx".
func CommandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		a = redact.Text(a)
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`;&|<>*?()[]{}#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// BrokerFeatures is what `rabbitmqctl list_feature_flags` and
// `list_deprecated_features` report of a broker
// (https://www.rabbitmq.com/docs/feature-flags,
// https://www.rabbitmq.com/docs/deprecated-features).
type BrokerFeatures struct {
	// FeatureFlags maps each feature flag to its state: enabled, disabled,
	// state_changing, unavailable.
	FeatureFlags map[string]string `json:"feature_flags"`
	// DeprecatedFeatures maps each deprecated feature to its phase:
	// permitted_by_default, denied_by_default, disconnected, removed. Absent
	// on versions before 3.13, which have no such list.
	DeprecatedFeatures map[string]string `json:"deprecated_features,omitempty"`
}
