package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
)

// Conditions are facts about how a burst went that decide whether its numbers
// can be trusted at all. They are part of the evidence a history's trailer
// records (verdict.Evidence): the JSON names are the trailer's, and
// ReconcileErr and Unsent, which reconciliation finds, are recorded too.
type Conditions struct {
	ReconcileErr Failure `json:"reconcile_error,omitzero"` // the ledger did not add up (an rmqtorture bug)
	Unsent       int     `json:"unsent"`                   // orders never published
	// Interrupted: Ctrl-C cut the burst short (before it and its faults
	// ended), so its expectations, written for a whole burst, are not
	// checked; lost and unexpected still fail. A Ctrl-C during the drain,
	// which goes on, leaves the counts whole and is not this.
	Interrupted     bool    `json:"interrupted,omitempty"`
	PublishErr      Failure `json:"publish_error,omitzero"`    // the publisher gave up (reconnect deadline) before the burst was done
	BrokerNotBack   Failure `json:"broker_not_back,omitzero"`  // the broker did not accept AMQP again within its deadline
	FaultMissed     Failure `json:"fault_missed,omitzero"`     // a planned fault never fired
	DrainIncomplete Failure `json:"drain_incomplete,omitzero"` // the drain hit its deadline or failed
}

// Failure is a condition's error (none: the zero Failure). In a run it is
// the error itself; in a history it is the error's text without URL
// passwords or terminal codes (redact.Foreign), as result.json has it, so
// the reasons check re-judges from it are result.json's.
type Failure struct{ Err error }

// MarshalJSON writes the error's redacted text.
func (f Failure) MarshalJSON() ([]byte, error) {
	if f.Err == nil {
		return []byte(`""`), nil
	}
	return json.Marshal(redact.Foreign(f.Err.Error()))
}

// UnmarshalJSON reads an error's text ("" is none).
func (f *Failure) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	f.Err = nil
	if s != "" {
		f.Err = errors.New(s)
	}
	return nil
}

// Observed is what a burst measured beside the ledger that expectations can
// check. It is part of the evidence a history's trailer records
// (verdict.Evidence), under these JSON names.
type Observed struct {
	BlockedMS     float64  `json:"blocked_ms"`
	ChannelCloses []string `json:"channel_closes,omitempty"`
	// LostAllowed: the messages or the queue were not durable, or the queue
	// discards messages by design, so a confirmed message that is gone is
	// counted but fails nothing.
	LostAllowed bool `json:"lost_allowed,omitempty"`
	// Consumers is what live consumers measured (nil without them).
	Consumers *ConsumerStats `json:"consumers,omitempty"`
	// DeadLetterLossAllowed: confirmed messages lost on the dead-letter
	// path (metrics.Counts.LostDeadLetterPath) fail nothing;
	// DeadLetterGuarantee says what the queue promises on that path, with
	// its source (Scenario.DeadLetterPath).
	DeadLetterLossAllowed bool   `json:"dead_letter_loss_allowed,omitempty"`
	DeadLetterGuarantee   string `json:"dead_letter_guarantee,omitempty"`
	// FalseAcks counts basic.acks received while a majority of a
	// cluster's nodes was down (QuorumLossOutcome.Acked): a quorum queue
	// cannot have committed those messages.
	FalseAcks int `json:"false_acks,omitempty"`
	// AssertionsFailed lists the steps that check the broker rather than
	// act on it (assert-whole) and failed, one reason each.
	AssertionsFailed []string `json:"assertions_failed,omitempty"`
	// DeadLetterReasons counts the ids taken from the dead-letter queue by
	// the reason of their latest x-death entry (ModeResult.DeadLetterReasons).
	DeadLetterReasons map[string]int `json:"dead_letter_reasons,omitempty"`
	// PowerCutsUnproven lists the power cuts whose control files do not
	// prove that unsynced writes were dropped and synced ones kept
	// (PowerCut.Proven), one sentence each: such a run proves nothing
	// about durability.
	PowerCutsUnproven []string `json:"power_cuts_unproven,omitempty"`
}

// onlyValue checks that histogram h (value → messages) holds exactly one
// value, want, and describes it otherwise.
func onlyValue(name string, h map[string]int, want int) string {
	if len(h) == 1 {
		if _, ok := h[fmt.Sprint(want)]; ok {
			return ""
		}
	}
	keys := slices.Sorted(maps.Keys(h))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, h[k])
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("%s: expected every message at exactly %d, got %s (value×messages)", name, want, strings.Join(parts, ", "))
}

// Judge turns a reconciled burst into a verdict. It is pure. A confirmed
// message that was never delivered and a delivery of an id never published
// always fail; the scenario's expectations add limits. Fail outranks
// inconclusive: a measured loss is a finding even when the run was cut short.
// Reasons come in the order of checks: every failure, then every doubt.
func Judge(mode Mode, c metrics.Counts, obs Observed, e Expect, cond Conditions) Verdict {
	return VerdictOf(JudgeChecks(mode, c, obs, e, cond))
}

// CheckOutcome is one check of the judge's table run on one burst: the
// check's name (e.g. "lost", "mode expectations"), whether a finding
// fails the burst (else it makes it inconclusive), and its findings, one
// sentence each (none: the burst satisfies the check). A JUnit report
// makes one testcase of each (reports.JUnit).
type CheckOutcome struct {
	Name    string
	Fails   bool
	Reasons []string
}

// JudgeChecks runs every check of the judge's table on a reconciled burst,
// in the table's order; Judge is VerdictOf its outcomes. It is pure.
func JudgeChecks(mode Mode, c metrics.Counts, obs Observed, e Expect, cond Conditions) []CheckOutcome {
	in := judgeInput{mode: mode, c: c, obs: obs, e: e, cond: cond}
	out := make([]CheckOutcome, len(checks))
	for i, ch := range checks {
		out[i] = CheckOutcome{Name: ch.name, Fails: ch.fails, Reasons: ch.run(in)}
	}
	return out
}

// VerdictOf is the verdict of a burst's check outcomes: fail when a
// failing check found something, else inconclusive when any check did,
// else pass. Reasons: every failure, then every doubt, each in the
// table's order.
func VerdictOf(outcomes []CheckOutcome) Verdict {
	var fails, doubts []string
	for _, o := range outcomes {
		if o.Fails {
			fails = append(fails, o.Reasons...)
		} else {
			doubts = append(doubts, o.Reasons...)
		}
	}
	switch {
	case len(fails) > 0:
		return Verdict{Status: Fail, Reasons: append(fails, doubts...)}
	case len(doubts) > 0:
		return Verdict{Status: Inconclusive, Reasons: doubts}
	}
	return Verdict{Status: Pass}
}

// judgeInput is everything Judge looks at, handed to every check.
type judgeInput struct {
	mode Mode
	c    metrics.Counts
	obs  Observed
	e    Expect
	cond Conditions
}

// check is one named rule of the judge: run returns its reasons (none when
// the burst satisfies it). A check with fails set fails the burst; any other
// makes it inconclusive.
type check struct {
	name  string
	fails bool
	run   func(judgeInput) []string
}

// checks is the judge's table, run in order; the verdict's reasons follow
// that order (failures first, then doubts). To add a check, append a
// {name, fails, run} entry here, with run returning one reason per finding
// in the field's terms, and add a Judge test that trips it.
var checks = []check{
	{"lost", true, checkLost},
	{"lost on the dead-letter path", true, checkDeadLetterPath},
	{"unexpected", true, checkUnexpected},
	{"resurrected", true, checkResurrected},
	{"false ack", true, checkFalseAcks},
	{"assertion", true, checkAssertions},
	{"limits", true, checkLimits},
	{"mode expectations", true, checkModeExpectations},
	{"channel closed with", true, checkChannelClosedWith},
	{"conditions", false, checkConditions},
	{"power cut not proven", false, checkPowerCuts},
	{"not checked: interrupted", false, checkNotChecked},
	{"unverified", false, checkUnverified},
	{"interrupted", false, checkInterrupted},
	{"unsent", false, checkUnsent},
}

// checkLost fails confirmed messages never delivered, unless the burst's
// basic.ack never promised disk (a transient message or a non-durable queue):
// then the ledger still reports them.
func checkLost(in judgeInput) []string {
	if in.c.Lost <= 0 || in.obs.LostAllowed {
		return nil
	}
	return []string{printer.Sprintf("%d confirmed messages lost: basic.ack received, never delivered", in.c.Lost)}
}

// checkPowerCuts doubts a burst whose power cuts were not proven by their
// control files: the filesystem kept what a power cut drops (or dropped
// what was synced), so nothing it shows is about durability.
func checkPowerCuts(in judgeInput) []string {
	return in.obs.PowerCutsUnproven
}

// checkAssertions fails every step that checked the broker and found it
// not as asserted (assert-whole: the cluster not whole).
func checkAssertions(in judgeInput) []string {
	return in.obs.AssertionsFailed
}

// checkFalseAcks fails basic.acks received while a majority of the
// cluster's nodes was down: a quorum queue commits (and confirms) only on
// a majority (https://www.rabbitmq.com/docs/quorum-queues).
func checkFalseAcks(in judgeInput) []string {
	if in.obs.FalseAcks <= 0 {
		return nil
	}
	return []string{printer.Sprintf("%d basic.acks received while a majority of the nodes was down: a quorum queue cannot have committed them", in.obs.FalseAcks)}
}

// checkDeadLetterPath fails confirmed messages lost on the dead-letter path
// (in neither queue, and they may have been dead-lettered before the broker
// went down) unless the scenario allows it: by default where the queue
// dead-letters at most once.
func checkDeadLetterPath(in judgeInput) []string {
	n := in.c.LostDeadLetterPath
	if n <= 0 || in.obs.DeadLetterLossAllowed {
		return nil
	}
	return []string{printer.Sprintf("%d confirmed messages lost on the dead-letter path: basic.ack received, found in neither the queue nor its dead-letter queue, and they may have been dead-lettered before the broker went down; %s", n, in.obs.DeadLetterGuarantee)}
}

func checkUnexpected(in judgeInput) []string {
	if in.c.Unexpected <= 0 {
		return nil
	}
	return []string{printer.Sprintf("%d unexpected deliveries: ids this run never published (stale queue or bug)", in.c.Unexpected)}
}

// checkResurrected fails ids the scenario's delete-queue deleted with the
// queue that the drain delivered anyway, from the queue declared again
// under the same name: the deleted queue's messages came back, as a quorum
// queue member on a node that was down during the delete can make them do
// (rabbitmq-server#12366). Like an unexpected delivery, never a normal one.
func checkResurrected(in judgeInput) []string {
	if in.c.Resurrected <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("unexpected: %d messages deleted with the queue by delete-queue were delivered after it was declared again (rabbitmq-server#12366)", in.c.Resurrected)}
}

// checkLimits applies the scenario-wide expect.max_* limits (not to a burst
// Ctrl-C cut short: see checkNotChecked).
func checkLimits(in judgeInput) []string {
	if in.cond.Interrupted {
		return nil
	}
	var out []string
	limit := func(name string, got int, max *int) {
		if max != nil && got > *max {
			out = append(out, fmt.Sprintf("%s %d exceeds expect.max_%s %d", name, got, name, *max))
		}
	}
	if most := in.e.MaxUnconfirmedMissing; most != nil && in.c.UnconfirmedMissing > *most {
		// In plain words: fire-and-forget's silent loss, not the broker's.
		by := "expect.max_unconfirmed_missing"
		if *most == 0 {
			by += " (or --fail-on-missing)"
		}
		out = append(out, printer.Sprintf("%d of %d orders missing: published without an error, never delivered; %s allows %d", in.c.UnconfirmedMissing, in.c.Sent, by, *most))
	}
	limit("in_doubt", in.c.InDoubt, in.e.MaxInDoubt)
	limit("duplicates", in.c.Duplicates, in.e.MaxDuplicates)
	limit("nacked", in.c.Nacked, in.e.MaxNacked)
	limit("returned", in.c.Returned, in.e.MaxReturned)
	return out
}

// checkModeExpectations applies the numeric expectations of the burst's mode
// (expect.modes.<mode>), in the order ModeExpectations.fields lists them
// (not to a burst Ctrl-C cut short: see checkNotChecked).
func checkModeExpectations(in judgeInput) []string {
	ex, ok := in.e.Modes[in.mode]
	if !ok || in.cond.Interrupted {
		return nil
	}
	var out []string
	for _, f := range ex.fields() {
		if f.v == nil {
			continue
		}
		if msg := checkModeField(in, f.name, *f.v); msg != "" {
			out = append(out, in.e.scoped(in.mode, f.name, msg))
		}
	}
	if want := ex.DeadLetterReason; want != "" {
		if msg := checkDeadLetterReason(in.obs.DeadLetterReasons, want); msg != "" {
			out = append(out, in.e.scoped(in.mode, "dead_letter_reason", msg))
		}
	}
	return out
}

// checkDeadLetterReason checks that every id taken from the dead-letter
// queue carried reason want in its latest x-death entry (reasons: reason →
// ids) and describes what it carried otherwise.
func checkDeadLetterReason(reasons map[string]int, want string) string {
	if len(reasons) == 1 && reasons[want] > 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(reasons))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, reasons[k])
	}
	if len(parts) == 0 {
		parts = []string{"nothing dead-lettered"}
	}
	return fmt.Sprintf("dead_letter_reason: expected every dead-lettered message to carry x-death reason %s, got %s (reason×messages)", want, strings.Join(parts, ", "))
}

// checkModeField checks one set expectation, want, named as in the scenario
// file: min_* fields are lower bounds, histogram fields need every message
// at want, and the rest are exact counts. It returns "" when it holds.
func checkModeField(in judgeInput, name string, want int) string {
	c, obs := in.c, in.obs
	switch name {
	case "min_went_in_doubt":
		if c.WentInDoubt < want {
			return fmt.Sprintf("went_in_doubt %d, expected at least %d: the fault did not leave messages in doubt", c.WentInDoubt, want)
		}
	case "max_went_in_doubt":
		if c.WentInDoubt > want {
			return fmt.Sprintf("went_in_doubt %d, expected at most %d", c.WentInDoubt, want)
		}
	case "min_blocked_ms":
		if obs.BlockedMS < float64(want) {
			return fmt.Sprintf("blocked %.0f ms, expected at least %d ms of connection.blocked", obs.BlockedMS, want)
		}
	case "min_redeliveries":
		if c.Redeliveries < want {
			return fmt.Sprintf("redeliveries %d, expected at least %d", c.Redeliveries, want)
		}
	case "deliveries_per_message", "retries", "x_death_count_at_park":
		if obs.Consumers == nil {
			return fmt.Sprintf("%s: no live consumers measured it", name)
		}
		h := obs.Consumers.DeliveriesPerMessage
		switch name {
		case "retries":
			h = obs.Consumers.RetriesAtPark
		case "x_death_count_at_park":
			h = obs.Consumers.XDeathCountAtPark
		}
		return onlyValue(name, h, want)
	case "consumer_changes":
		if obs.Consumers == nil {
			return fmt.Sprintf("%s: no live consumers measured it", name)
		}
		if got := obs.Consumers.ConsumerChanges; got != want {
			return fmt.Sprintf("consumer_changes %d, expected exactly %d", got, want)
		}
	case "min_unconfirmed_missing":
		if c.UnconfirmedMissing < want {
			return fmt.Sprintf("unconfirmed_missing %d, expected at least %d", c.UnconfirmedMissing, want)
		}
	default:
		got := map[string]int{
			"sent": c.Sent, "confirmed": c.Confirmed, "lost": c.Lost, "nacked": c.Nacked, "returned": c.Returned,
			"in_doubt": c.InDoubt, "delivered": c.Delivered, "unconfirmed_delivered": c.UnconfirmedDelivered,
			"unconfirmed_missing": c.UnconfirmedMissing, "duplicates": c.Duplicates,
			"not_published": c.NotPublished, "pending_at_deadline": c.PendingAtDeadline,
			"dead_lettered": c.DeadLettered, "lost_dead_letter_path": c.LostDeadLetterPath,
			"redeliveries": c.Redeliveries, "republished": c.Republished, "late_confirms": c.LateConfirms,
		}
		if got[name] != want {
			return fmt.Sprintf("%s %d, expected exactly %d", name, got[name], want)
		}
	}
	return ""
}

// checkChannelClosedWith fails when the mode expects a channel or connection
// close whose reason contains expect.modes.<mode>.channel_closed_with and
// none was seen.
func checkChannelClosedWith(in judgeInput) []string {
	want := in.e.Modes[in.mode].ChannelClosedWith
	closes := in.obs.ChannelCloses
	if in.obs.Consumers != nil {
		// A live consumer's channel counts too (a consumer timeout).
		closes = append(slices.Clip(closes), in.obs.Consumers.ChannelCloses...)
	}
	if want == "" || in.cond.Interrupted || slices.ContainsFunc(closes, func(r string) bool { return strings.Contains(r, want) }) {
		return nil
	}
	return []string{in.e.scoped(in.mode, "channel_closed_with", fmt.Sprintf("no channel or connection closed with %q (closes seen: %q)", want, closes))}
}

// checkConditions doubts the numbers when the run itself went wrong.
func checkConditions(in judgeInput) []string {
	var out []string
	cond := in.cond
	for _, f := range []Failure{cond.ReconcileErr, cond.BrokerNotBack, cond.FaultMissed, cond.PublishErr, cond.DrainIncomplete} {
		if f.Err != nil {
			out = append(out, f.Err.Error())
		}
	}
	return out
}

func checkUnverified(in judgeInput) []string {
	if in.c.Unverified <= 0 {
		return nil
	}
	return []string{printer.Sprintf("%d confirmed messages unverified: the queue was never drained", in.c.Unverified)}
}

// checkNotChecked names the expectations of a burst Ctrl-C cut short: they
// were written for a whole burst (exactly 10,000 confirmed, at least one in
// doubt, at most 0 in doubt), so an interrupted one can neither pass nor
// fail them. A confirmed message lost and an unexpected delivery still fail.
func checkNotChecked(in judgeInput) []string {
	if !in.cond.Interrupted {
		return nil
	}
	var set []string
	for _, f := range in.e.Modes[in.mode].fields() {
		if f.v != nil {
			set = append(set, fmt.Sprintf("%s %d", f.name, *f.v))
		}
	}
	if w := in.e.Modes[in.mode].ChannelClosedWith; w != "" {
		set = append(set, fmt.Sprintf("channel_closed_with %q", w))
	}
	if w := in.e.Modes[in.mode].DeadLetterReason; w != "" {
		set = append(set, "dead_letter_reason "+w)
	}
	var parts []string
	if len(set) > 0 {
		parts = append(parts, fmt.Sprintf("expect.modes.%s %s", in.mode, strings.Join(set, ", ")))
	}
	for _, l := range []struct {
		name string
		v    *int
	}{{"unconfirmed_missing", in.e.MaxUnconfirmedMissing}, {"in_doubt", in.e.MaxInDoubt}, {"duplicates", in.e.MaxDuplicates}, {"nacked", in.e.MaxNacked}, {"returned", in.e.MaxReturned}} {
		if l.v != nil {
			parts = append(parts, fmt.Sprintf("expect.max_%s %d", l.name, *l.v))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"not checked: interrupted: " + strings.Join(parts, "; ")}
}

func checkInterrupted(in judgeInput) []string {
	if !in.cond.Interrupted {
		return nil
	}
	return []string{"interrupted before the burst completed"}
}

func checkUnsent(in judgeInput) []string {
	if in.cond.Unsent <= 0 {
		return nil
	}
	return []string{printer.Sprintf("%d orders were never published", in.cond.Unsent)}
}

// Overall combines verdicts: any fail fails, else any inconclusive is
// inconclusive, else pass. Reasons are prefixed with their source.
func Overall(results []ModeResult) Verdict {
	v := Verdict{Status: Pass}
	for _, r := range results {
		switch r.Verdict.Status {
		case Fail:
			v.Status = Fail
		case Inconclusive:
			if v.Status == Pass {
				v.Status = Inconclusive
			}
		}
		for _, reason := range r.Verdict.Reasons {
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: %s", r.Mode, reason))
		}
	}
	if len(results) == 0 {
		return Verdict{Status: Inconclusive, Reasons: []string{"no mode ran"}}
	}
	return v
}
