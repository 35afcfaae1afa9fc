package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
)

// This file says which queue settings make the broker discard or divert
// confirmed messages by design, and which settings do not do what their
// name says on a queue type and broker version. It is a table
// (settingRules) and what follows from it.

// SettingRule is one row of the settings table: on a queue of type Type,
// Argument set to Value does not do what its name says on brokers whose
// version matches Versions; the broker acts as if it were ActsAs.
type SettingRule struct {
	Type     QueueType
	Argument string
	Value    string
	// UnlessArgument and UnlessValue, when set, name the other argument
	// and value that make the setting work after all.
	UnlessArgument, UnlessValue string
	// Versions is a semantic-version constraint on the broker version
	// ("" every version).
	Versions string
	ActsAs   string // the value the broker acts on instead
	Does     string // what the broker does, in words
	Source   string // where it is said or measured
}

// settingRules is the settings table. A row holds from the first broker
// version its source names; a row without an upper bound holds for every
// release up to the newest the source knows of.
var settingRules = []SettingRule{
	{
		Type: Quorum, Argument: "x-overflow", Value: "reject-publish-dlx", Versions: ">= 3.8.0", ActsAs: "drop-head",
		Does: "quorum queues have no reject-publish-dlx: a full queue drops its oldest message (dead-lettered when the queue has a dead-letter exchange) and never rejects a publish (no basic.nack)",
		// Quorum queues have a length limit since 3.8.0 (rabbitmq-server
		// PR #1834); PR #16673 (open) adds reject-publish-dlx to them.
		Source: "rabbitmq-server PR #16673; measured on RabbitMQ 4.0.5",
	},
	{
		Type: Quorum, Argument: "x-dead-letter-strategy", Value: "at-least-once", UnlessArgument: "x-overflow", UnlessValue: "reject-publish",
		Versions: ">= 3.10.0", ActsAs: "at-most-once",
		Does:   "at-least-once dead-lettering needs x-overflow reject-publish; with any other overflow the queue dead-letters at most once",
		Source: "https://www.rabbitmq.com/docs/quorum-queues#dead-lettering",
	},
	{
		Type: Classic, Argument: "x-dead-letter-strategy", Value: "at-least-once", ActsAs: "at-most-once",
		Does:   "classic queues dead-letter at most once, whatever x-dead-letter-strategy says",
		Source: "https://www.rabbitmq.com/docs/dlx",
	},
}

// SettingRules returns a copy of the settings table.
func SettingRules() []SettingRule { return slices.Clone(settingRules) }

// brokerVersion parses a broker version as result.json spells it
// ("RabbitMQ 4.0.5", or "4.0.5"); nil when it is not a version.
func brokerVersion(s string) *semver.Version {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil
	}
	v, err := semver.NewVersion(f[len(f)-1])
	if err != nil {
		return nil
	}
	return v
}

// Matches reports whether the row applies to a queue of type t with
// arguments args on broker version ("RabbitMQ 4.0.5"; "" or unparsable:
// every version, since the broker is not known yet).
func (r SettingRule) Matches(t QueueType, args map[string]any, version string) bool {
	if t != r.Type || fmt.Sprint(args[r.Argument]) != r.Value {
		return false
	}
	if r.UnlessArgument != "" && fmt.Sprint(args[r.UnlessArgument]) == r.UnlessValue {
		return false
	}
	v := brokerVersion(version)
	if r.Versions == "" || v == nil {
		return true
	}
	c, err := semver.NewConstraint(r.Versions)
	return err == nil && c.Check(v)
}

// Effective returns the queue's arguments as a broker of version ("" any)
// acts on them, and the rows of the settings table that changed them.
func (q Queue) Effective(version string) (map[string]any, []SettingRule) {
	args := maps.Clone(q.Arguments)
	if args == nil {
		args = map[string]any{}
	}
	var applied []SettingRule
	for _, r := range settingRules {
		if r.Matches(q.Type, q.Arguments, version) {
			args[r.Argument] = r.ActsAs
			applied = append(applied, r)
		}
	}
	return args, applied
}

// discarding lists the effective arguments that make a queue remove
// confirmed messages by design (expiry, or a length limit that drops the
// head), as LossReasons.
func discarding(args map[string]any, applied []SettingRule) []LossReason {
	var out []LossReason
	if ttl, ok := args["x-message-ttl"]; ok {
		out = append(out, LossReason{Label: "TTL", Why: fmt.Sprintf("x-message-ttl %v ms: the queue removes a message once it has waited that long (https://www.rabbitmq.com/docs/ttl)", ttl)})
	}
	overflow, _ := args["x-overflow"].(string)
	for _, k := range []string{"x-max-length", "x-max-length-bytes"} {
		limit, ok := args[k]
		if !ok || (overflow != "" && overflow != "drop-head") {
			continue
		}
		overflowIs := "with drop-head"
		for _, r := range applied {
			if r.Argument == "x-overflow" {
				overflowIs = fmt.Sprintf("with x-overflow %s, which acts as %s on a %s queue (%s)", r.Value, r.ActsAs, r.Type, r.Source)
			}
		}
		why := fmt.Sprintf("%s %v %s: a full queue removes its oldest message (https://www.rabbitmq.com/docs/maxlength)", k, limit, overflowIs)
		out = append(out, LossReason{Label: "drop-head", Why: why})
	}
	return out
}

// intArg reads an integer queue argument, whatever integer type decoding
// gave it.
func intArg(args map[string]any, k string) (int64, bool) {
	switch v := args[k].(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		return int64(v), true
	case float64:
		return int64(v), v == float64(int64(v))
	}
	return 0, false
}

// LossReason is one reason a confirmed message may be gone by design.
type LossReason struct {
	// Label names it in a table cell and result.json: TTL, drop-head,
	// non-durable queue, transient messages.
	Label string
	// Why says it in a sentence, with the setting and its source.
	Why string
}

// DiscardsOn names the queue settings that make a broker of version ("" any
// version) remove confirmed messages by design ("" when none): x-message-ttl,
// or a length limit whose effective overflow is drop-head, without a
// dead-letter queue rmqtorture drains to catch them. With a dead-letter
// exchange of the scenario's own the messages are diverted there, out of
// rmqtorture's sight: gone all the same.
func (q Queue) DiscardsOn(version string) string {
	var labels []string
	for _, r := range q.discardReasons(version) {
		labels = append(labels, r.Label)
	}
	return strings.Join(labels, ", ")
}

func (q Queue) discardReasons(version string) []LossReason {
	if q.DeadLetterQueue {
		return nil
	}
	args, applied := q.Effective(version)
	out := discarding(args, applied)
	if dlx, ok := q.Arguments["x-dead-letter-exchange"]; ok {
		for i := range out {
			out[i].Why += fmt.Sprintf("; dead-lettered to exchange %q, which rmqtorture does not drain", dlx)
		}
	}
	return out
}

// AllowedLoss lists why a confirmed message may be gone from the scenario's
// queue by design on broker version ("" any): messages that expire or are
// dropped from the head without a dead-letter queue, a non-durable classic
// queue, transient messages in a classic queue (a quorum queue writes every
// message to its log). nil when a confirmed message must survive.
func (s *Scenario) AllowedLoss(version string) []LossReason {
	var out []LossReason
	if s.Queue.Type != Quorum && !s.Queue.IsDurable() {
		out = append(out, LossReason{Label: "non-durable queue", Why: "a non-durable classic queue is gone after a broker restart, with everything in it (https://www.rabbitmq.com/docs/queues#durability)"})
	}
	if s.Queue.Type != Quorum && !s.Load.IsPersistent() {
		out = append(out, LossReason{Label: "transient messages", Why: "a basic.ack for a transient message in a classic queue promises nothing about disk (https://www.rabbitmq.com/docs/confirms#publisher-confirms)"})
	}
	if s.CutsPower() {
		switch s.Queue.Type {
		case Classic:
			out = append(out, LossReason{Label: "power loss on a classic queue", Why: "a classic queue confirms a persistent message once it is written to the operating system, not fsynced: the store's sync flushes its write buffer and then confirms (rabbit_classic_queue_store_v2.erl, sync/1), so a power cut drops what the kernel had not written back (measured: docs/power-loss.md)"})
		case Stream:
			// A stream confirms once a majority of its members have
			// written a message (https://www.rabbitmq.com/docs/streams):
			// a cut of fewer keeps it in the page cache of the rest, and
			// a loss there breaks the promise.
			switch {
			case s.Broker.Nodes <= 1:
				out = append(out, LossReason{Label: "power loss on a stream", Why: "a stream confirms what its replicas have written, never fsynced: \"streams replicas can lose data in hard crashes like uncontrolled power-offs\" (amazon-mq/rabbitmq-stream-s3#46; rabbitmq-server#9457), and a single node has no replica to keep it (measured: docs/power-loss.md)"})
			case s.cutsMajorityPower():
				out = append(out, LossReason{Label: "power loss on a stream", Why: "a stream confirms what a majority of its members have written, never fsynced: \"streams replicas can lose data in hard crashes like uncontrolled power-offs\" (amazon-mq/rabbitmq-stream-s3#46; rabbitmq-server#9457), and this power cut took a majority of them at once (measured: docs/power-loss.md)"})
			}
		}
	}
	return append(out, s.Queue.discardReasons(version)...)
}

// LossLabels joins the labels of reasons ("" for none).
func LossLabels(reasons []LossReason) string {
	labels := make([]string, len(reasons))
	for i, r := range reasons {
		labels[i] = r.Label
	}
	return strings.Join(labels, ", ")
}

// DeadLetterPath is how a queue moves confirmed messages into the
// dead-letter queue rmqtorture drains, and what it promises on the way.
type DeadLetterPath struct {
	// AfterPublish is the earliest the queue dead-letters a message after
	// its publish call: x-message-ttl, or 0 when a length limit, a
	// rejecting consumer or a delivery limit may dead-letter it at once.
	AfterPublish time.Duration
	// By names what dead-letters messages (x-message-ttl 2000 ms, …).
	By string
	// AtLeastOnce: the queue promises every dead-lettered message reaches
	// the dead-letter queue (quorum, x-dead-letter-strategy at-least-once
	// with x-overflow reject-publish).
	AtLeastOnce bool
	// Guarantee says what the queue promises, with its source.
	Guarantee string
}

// DeadLetterPath says how the scenario's queue dead-letters confirmed
// messages into its dead-letter queue on broker version ("" any); ok is
// false without queue.dead_letter_queue or when nothing dead-letters a
// confirmed message (a rejected publish, x-overflow reject-publish-dlx on a
// classic queue, is not confirmed).
func (s *Scenario) DeadLetterPath(version string) (p DeadLetterPath, ok bool) {
	q := s.Queue
	if !q.DeadLetterQueue {
		return p, false
	}
	args, _ := q.Effective(version)
	var by []string
	p.AfterPublish = -1
	earliest := func(d time.Duration, what string) {
		by = append(by, what)
		if p.AfterPublish < 0 || d < p.AfterPublish {
			p.AfterPublish = d
		}
	}
	if ttl, ok := intArg(args, "x-message-ttl"); ok {
		earliest(time.Duration(ttl)*time.Millisecond, fmt.Sprintf("x-message-ttl %d ms", ttl))
	}
	for _, r := range discarding(args, nil) {
		if r.Label == "drop-head" {
			earliest(0, "a length limit with drop-head")
			break
		}
	}
	if c := s.Consumers; c.Enabled() && (c.OnDelivery == ConsumerReject || (c.OnDelivery == ConsumerNackRequeue && q.Type == Quorum)) {
		earliest(0, "consumers that "+string(c.OnDelivery))
	}
	if len(by) == 0 {
		return DeadLetterPath{}, false
	}
	p.By = strings.Join(by, ", ")
	switch {
	case q.Type == Quorum && args["x-dead-letter-strategy"] == "at-least-once":
		p.AtLeastOnce = true
		p.Guarantee = "this quorum queue dead-letters at least once (x-dead-letter-strategy at-least-once with x-overflow reject-publish; https://www.rabbitmq.com/docs/quorum-queues#dead-lettering)"
	case q.Type == Quorum:
		p.Guarantee = "quorum queues dead-letter at most once unless x-dead-letter-strategy is at-least-once with x-overflow reject-publish (https://www.rabbitmq.com/docs/quorum-queues#dead-lettering)"
	default:
		p.Guarantee = "classic queues dead-letter at most once (https://www.rabbitmq.com/docs/dlx)"
	}
	return p, true
}

// DeadLetterPathLossAllowed reports whether confirmed messages lost on the
// dead-letter path fail nothing: expect.allow_dead_letter_path_loss when
// set, else whether the queue dead-letters at most once.
func (s *Scenario) DeadLetterPathLossAllowed(p DeadLetterPath) bool {
	if a := s.Expect.AllowDeadLetterPathLoss; a != nil {
		return *a
	}
	return !p.AtLeastOnce
}

// SettingWarnings names, one sentence each, every queue setting that does
// not do what its name says on the scenario's queue types on broker version
// ("RabbitMQ 4.0.5"; "" when not known yet: every version the table
// covers).
func (s *Scenario) SettingWarnings(version string) []string {
	var out []string
	on := "every RabbitMQ version the settings table covers"
	if version != "" {
		on = version
	}
	for _, t := range s.queueTypes() {
		q := s.Queue
		q.Type = t
		_, applied := q.Effective(version)
		for _, r := range applied {
			out = append(out, fmt.Sprintf("queue.arguments.%s: %s on a %s queue acts as %s on %s: %s (%s)", r.Argument, r.Value, t, r.ActsAs, on, r.Does, r.Source))
		}
	}
	return out
}
