package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Thresholds are the limits `rmqtorture compare` holds a result to, relative
// to a baseline of the same scenario. Lost confirmed messages (where not
// allowed), a mode missing from the result and a mode whose own verdict is
// not pass always count as regressions, whatever the thresholds.
type Thresholds struct {
	// MaxThroughputDropPct: a rate (msg/s) may fall at most this many percent
	// below the baseline's; 0–100. Default 70 (DefaultThresholds). 100
	// never fails.
	MaxThroughputDropPct float64
	// MaxP99RisePct: confirm latency p99 (ms) may rise at most this many
	// percent above the baseline's; ≥ 0. Default 550.
	MaxP99RisePct float64
	// MaxRecoveryMS, when set: client recovery (fault → first publish or
	// confirm after reconnecting) may take at most this many ms.
	MaxRecoveryMS *float64
	// MaxRecoveryRisePct, when set: client recovery may rise at most this
	// many percent above the baseline's.
	MaxRecoveryRisePct *float64
	// MaxMissingRisePts: fire-and-forget's missing share (unconfirmed
	// missing ÷ sent, in %) may rise at most this many percentage points
	// above the baseline's; 0–100. Default 35: in a fault scenario the
	// share depends on how fast the broker took the burst in before the
	// fault (kill-mid-burst measured 53% to 84% in 10 runs on one quiet
	// machine). A share, not a count, so results of different --messages
	// compare.
	MaxMissingRisePts float64
}

// DefaultThresholds are compare's flag defaults: a 70% throughput drop, a
// 550% p99 rise, a 35-point rise of the missing share, no recovery limit.
// Each sits just outside the worst change measured between 10 identical
// default runs of kill-mid-burst and of baseline on one quiet 2-core
// machine, every ordered pair compared (docs/ci.md, "How much two
// identical runs differ"): 67.4% (fire-and-forget's intake before a kill,
// and a confirm mode's rate held against it), 527% (confirm-each's p99 of
// about 1 ms, once 6 ms) and 31.3 points. Narrower limits flag identical
// runs as regressions.
func DefaultThresholds() Thresholds {
	return Thresholds{MaxThroughputDropPct: 70, MaxP99RisePct: 550, MaxMissingRisePts: 35}
}

// Validate reports a threshold out of range (a negative percentage, a drop
// above 100%, a negative ms limit).
func (t Thresholds) Validate() error {
	switch {
	case t.MaxThroughputDropPct < 0 || t.MaxThroughputDropPct > 100 || math.IsNaN(t.MaxThroughputDropPct):
		return fmt.Errorf("max throughput drop must be 0–100 %%, got %v", t.MaxThroughputDropPct)
	case !(t.MaxP99RisePct >= 0):
		return fmt.Errorf("max p99 rise must be ≥ 0 %%, got %v", t.MaxP99RisePct)
	case t.MaxRecoveryMS != nil && !(*t.MaxRecoveryMS >= 0):
		return fmt.Errorf("max recovery must be ≥ 0 ms, got %v", *t.MaxRecoveryMS)
	case t.MaxRecoveryRisePct != nil && !(*t.MaxRecoveryRisePct >= 0):
		return fmt.Errorf("max recovery rise must be ≥ 0 %%, got %v", *t.MaxRecoveryRisePct)
	case !(t.MaxMissingRisePts >= 0 && t.MaxMissingRisePts <= 100):
		return fmt.Errorf("max missing rise must be 0–100 percentage points, got %v", t.MaxMissingRisePts)
	}
	return nil
}

// Check is one row of a mode's comparison: a metric in the baseline and the
// result, its change and its limit.
type Check struct {
	Metric   string `json:"metric"`
	Baseline string `json:"baseline"` // formatted; "-" when the baseline has no figure
	Result   string `json:"result"`   // formatted; "-" when the result has no figure
	// BaselineValue and ResultValue are the figures behind Baseline and
	// Result in the metric's unit (msg/s, ms, ids, % of sent); nil when not
	// a number or not measured.
	BaselineValue *float64 `json:"baseline_value"`
	ResultValue   *float64 `json:"result_value"`
	// ChangePct is (result − baseline) / baseline × 100; nil when either
	// figure is missing, the baseline is 0, or the row is not a measurement.
	ChangePct *float64 `json:"change_pct"`
	// ChangePts is result − baseline in percentage points, for a share (the
	// missing share); nil otherwise.
	ChangePts *float64 `json:"change_pts,omitempty"`
	// Reference, on a rate row, names the same-run rate the limit is held
	// against ("fire-and-forget in the same run"): both files have one, so
	// the row compares rate ÷ reference (a ratio) rather than msg/s, which
	// differ between machines while a ratio measured in one run does not.
	// BaselineRatio and ResultRatio are those ratios (msg/s ÷ msg/s); all
	// three are absent when the row compares plain msg/s.
	Reference     string   `json:"reference,omitempty"`
	BaselineRatio *float64 `json:"baseline_ratio,omitempty"`
	ResultRatio   *float64 `json:"result_ratio,omitempty"`
	Limit         string   `json:"limit"` // e.g. "≥ 480 (−20%)"; "" when nothing is checked
	OK            bool     `json:"ok"`
	// Regression says what regressed, in one sentence naming the mode; ""
	// when OK.
	Regression string `json:"regression,omitempty"`
}

// ModeComparison is one mode (and matrix cell) of the result against the
// same mode and cell of the baseline.
type ModeComparison struct {
	Label  string  `json:"mode"` // mode, and cell if any, as in the report tables
	Checks []Check `json:"checks"`
	// Note says why some checks are absent: the mode is missing from the
	// result, or new in it, or was not run.
	Note string `json:"note,omitempty"`
}

// Comparison is a result compared with its baseline, mode by mode.
type Comparison struct {
	Scenario   string           `json:"scenario"`
	Thresholds Thresholds       `json:"-"`
	Modes      []ModeComparison `json:"modes"`
	// BrokerWarning, when set, says the baseline and the result ran on
	// different broker versions or images (see BrokerWarning); "" when
	// they ran on the same broker, or when that is not known.
	BrokerWarning string   `json:"-"`
	Notes         []string `json:"notes"`       // differences worth knowing that decide nothing (e.g. burst sizes)
	Regressions   []string `json:"regressions"` // every failed check's sentence, in table order
}

// Regressed reports whether any check failed.
func (c *Comparison) Regressed() bool { return len(c.Regressions) > 0 }

// Comparable reports why base (read from baseName) and res (read from
// resName) cannot be compared: a schema_version outside OldestSchemaVersion
// to scenario.SchemaVersion in either file (Decode upgrades the older ones
// to the current layout), or different scenarios. The error names the file
// at fault.
func Comparable(baseName string, base *scenario.Result, resName string, res *scenario.Result) error {
	for _, f := range []struct {
		name string
		r    *scenario.Result
	}{{baseName, base}, {resName, res}} {
		if f.r.SchemaVersion < OldestSchemaVersion || f.r.SchemaVersion > scenario.SchemaVersion {
			return fmt.Errorf("%s: schema_version %d, this rmqtorture reads schema_version %d to %d", f.name, f.r.SchemaVersion, OldestSchemaVersion, scenario.SchemaVersion)
		}
		if f.r.Scenario == "" {
			return fmt.Errorf("%s: no scenario name: not an rmqtorture result.json", f.name)
		}
	}
	if base.Scenario != res.Scenario {
		return fmt.Errorf("%s: scenario %q, but baseline %s is of scenario %q", resName, res.Scenario, baseName, base.Scenario)
	}
	return nil
}

// modeKey matches a result's mode with the baseline's: mode, and matrix cell
// (queue type, persistence, repeat) if any.
func modeKey(m scenario.ModeResult) string { return label(m) }

// Compare checks res against base (same scenario; see Comparable) under t.
// Per mode, matched by mode and matrix cell:
//   - lost confirmed messages (lost > 0, not lost_allowed) fail;
//   - a verdict other than pass fails;
//   - pre-fault publish rate (msg/s), and the confirm rate for confirm
//     modes, may drop at most t.MaxThroughputDropPct;
//   - confirm latency p99 (ms) may rise at most t.MaxP99RisePct;
//   - client recovery (ms) is held to t.MaxRecoveryMS and
//     t.MaxRecoveryRisePct when set.
//
// A baseline mode missing from res (or not run in it) fails. A rate or p99
// the baseline does not have (0, or not measured) is shown and not checked.
// A result value exactly at a limit passes.
func Compare(base, res *scenario.Result, t Thresholds) *Comparison {
	c := &Comparison{Scenario: res.Scenario, Thresholds: t, BrokerWarning: BrokerWarning(base, res)}
	if n := brokerUnknownNote(base, res, "result"); n != "" {
		c.Notes = append(c.Notes, n)
	}
	c.Notes = append(c.Notes, runNotes(base, res)...)
	got := map[string]scenario.ModeResult{}
	for _, m := range res.Modes {
		got[modeKey(m)] = m
	}
	refs := references{base: sameRunReferences(base), res: sameRunReferences(res)}
	seen := map[string]bool{}
	for _, b := range base.Modes {
		k := modeKey(b)
		seen[k] = true
		r, ok := got[k]
		var mc ModeComparison
		switch {
		case !ok:
			mc = ModeComparison{Label: k, Note: "missing from the result", Checks: []Check{{
				Metric: "mode", Baseline: "run", Result: "missing", Limit: "present",
				Regression: fmt.Sprintf("%s: missing from the result", k),
			}}}
		case r.NotRun && !b.NotRun:
			mc = ModeComparison{Label: k, Note: "not run in the result", Checks: []Check{{
				Metric: "mode", Baseline: "run", Result: "not run", Limit: "run",
				Regression: fmt.Sprintf("%s: not run in the result", k),
			}}}
		default:
			mc = compareMode(k, &b, r, t, refs)
		}
		c.add(mc)
	}
	for _, r := range res.Modes {
		if k := modeKey(r); !seen[k] {
			mc := compareMode(k, nil, r, t, refs)
			mc.Note = "not in the baseline: only lost messages and the verdict are checked"
			c.add(mc)
		}
	}
	return c
}

func (c *Comparison) add(mc ModeComparison) {
	for _, ch := range mc.Checks {
		if !ch.OK && ch.Regression != "" {
			c.Regressions = append(c.Regressions, ch.Regression)
		}
	}
	c.Modes = append(c.Modes, mc)
}

// compareMode compares one mode; b is nil when the baseline lacks it. It
// yields one Check per row of comparedMetrics that applies, in table order.
func compareMode(k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds, refs references) ModeComparison {
	mc := ModeComparison{Label: k}
	if b != nil && b.NotRun {
		mc.Note = "not run in the baseline: only lost messages and the verdict are checked"
		b = nil
	}
	for _, m := range comparedMetrics {
		if m.kind.needsBaseline() && b == nil {
			continue
		}
		if m.shown != nil && !m.shown(b, r) {
			continue
		}
		mc.Checks = append(mc.Checks, m.check(k, b, r, t, refs))
	}
	return mc
}

// thresholdKind is how a compared metric is held to its limit.
type thresholdKind int

const (
	mustPass     thresholdKind = iota // the result's own verdict must be pass
	noLoss                            // no confirmed message lost, unless lost_allowed
	maxDrop                           // a rate (msg/s) may fall at most Thresholds.MaxThroughputDropPct
	maxRise                           // a latency (ms) may rise at most Thresholds.MaxP99RisePct
	maxRecovery                       // a recovery time (ms) is held to Thresholds.MaxRecoveryMS and MaxRecoveryRisePct
	maxShareRise                      // a share of sent (%) may rise at most Thresholds.MaxMissingRisePts points
)

// needsBaseline reports whether the kind compares with the baseline (and so
// is skipped for a mode the baseline lacks or did not run).
func (k thresholdKind) needsBaseline() bool { return k != mustPass && k != noLoss }

// comparedMetric is one row of a mode's comparison.
type comparedMetric struct {
	name  string // the Metric column
	field string // the result.json field, as an accept entry names it (AcceptFields)
	says  string // how a regression sentence names it; "" for mustPass and noLoss
	kind  thresholdKind
	shown func(b *scenario.ModeResult, r scenario.ModeResult) bool // nil: always; b is nil without a baseline
	// read gives the metric's figure and whether the mode measured it
	// (unused by mustPass and noLoss, which read the verdict and lost).
	read func(scenario.ModeResult) (float64, bool)
}

// comparedMetrics is what compare checks per mode, in report order. To
// compare a new figure, add a row naming it, its threshold kind, when it is
// shown and how to read it from a ModeResult.
var comparedMetrics = []comparedMetric{
	{name: "verdict", field: "verdict", kind: mustPass},
	{name: "lost (confirmed)", field: "lost", kind: noLoss, shown: func(_ *scenario.ModeResult, r scenario.ModeResult) bool {
		return r.Mode.ConfirmMode() || r.Lost > 0
	}},
	// Fire-and-forget's silent loss: the publisher's risk, not a broken
	// promise, so it is held to the baseline rather than to 0.
	{name: "missing (unconfirmed)", field: "unconfirmed_missing", says: "missing share", kind: maxShareRise,
		shown: func(b *scenario.ModeResult, r scenario.ModeResult) bool {
			return !r.Mode.ConfirmMode() || r.UnconfirmedMissing > 0 || b.UnconfirmedMissing > 0
		},
		read: func(m scenario.ModeResult) (float64, bool) {
			if m.Sent == 0 {
				return 0, false
			}
			return float64(m.UnconfirmedMissing) / float64(m.Sent) * 100, true
		}},
	// What the broker took in over the fault-free time: the same figure
	// whatever the burst's size or the fault's down time (issue 25:
	// confirm msg/s over the whole burst fell 77 % between a 2,000- and a
	// 20,000-order run of one scenario, from the down time alone).
	{name: "intake msg/s (before fault)", field: "intake_rate_msgs_per_s", says: "intake msg/s", kind: maxDrop, shown: bothIntake,
		read: func(m scenario.ModeResult) (float64, bool) { return m.IntakeRate, m.IntakeRate > 0 }},
	// Results written before intake was measured: the rates they have.
	{name: "publish msg/s (before fault)", field: "pre_fault_publish_rate_msgs_per_s", says: "publish msg/s (before fault)", kind: maxDrop,
		shown: func(b *scenario.ModeResult, r scenario.ModeResult) bool { return !bothIntake(b, r) },
		read:  func(m scenario.ModeResult) (float64, bool) { return m.PreFaultPublishRate, true }},
	{name: "confirm msg/s", field: "confirm_rate_msgs_per_s", says: "confirm msg/s", kind: maxDrop,
		shown: func(b *scenario.ModeResult, r scenario.ModeResult) bool {
			return r.Mode.ConfirmMode() && !bothIntake(b, r)
		},
		read: func(m scenario.ModeResult) (float64, bool) { return m.ConfirmRate, true }},
	{name: "confirm p99 ms", field: "confirm_latency_ms.p99", says: "confirm p99", kind: maxRise, shown: confirmModeShown,
		read: func(m scenario.ModeResult) (float64, bool) { return m.ConfirmLatency.P99, m.ConfirmLatency.Count > 0 }},
	{name: "client recovery ms", field: "client_recovery_ms", says: "client recovery", kind: maxRecovery,
		shown: func(b *scenario.ModeResult, r scenario.ModeResult) bool {
			return b.ClientRecoveryMS != nil || r.ClientRecoveryMS != nil
		},
		read: func(m scenario.ModeResult) (float64, bool) {
			if m.ClientRecoveryMS == nil {
				return 0, false
			}
			return *m.ClientRecoveryMS, true
		}},
}

func confirmModeShown(_ *scenario.ModeResult, r scenario.ModeResult) bool {
	return r.Mode.ConfirmMode()
}

// bothIntake reports whether the baseline b and the result r both measured
// what the broker took in (ModeResult.IntakeRate, or why not): then compare
// holds that figure, not the publish or whole-burst confirm rates.
func bothIntake(b *scenario.ModeResult, r scenario.ModeResult) bool {
	has := func(m scenario.ModeResult) bool { return m.IntakeRate > 0 || m.IntakeUnknown != "" }
	return b != nil && has(*b) && has(r)
}

// check holds mode k's figure in r to the metric's limit; b is the baseline
// (nil only for mustPass and noLoss).
func (m comparedMetric) check(k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds, refs references) Check {
	switch m.kind {
	case mustPass:
		return checkVerdict(m, k, b, r)
	case noLoss:
		return checkLost(m, k, b, r)
	case maxDrop:
		return checkDrop(m, k, b, r, t, refs)
	case maxRise:
		return checkRise(m, k, b, r, t)
	case maxShareRise:
		return checkShareRise(m, k, b, r, t)
	default:
		return checkRecovery(m, k, b, r, t)
	}
}

func checkVerdict(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult) Check {
	v := Check{Metric: m.name, Baseline: "-", Result: string(r.Verdict.Status), Limit: "pass", OK: r.Verdict.Status == scenario.Pass}
	if b != nil {
		v.Baseline = string(b.Verdict.Status)
	}
	if !v.OK {
		v.Regression = fmt.Sprintf("%s: verdict %s", k, r.Verdict.Status)
		if len(r.Verdict.Reasons) > 0 {
			v.Regression += " (" + strings.Join(r.Verdict.Reasons, "; ") + ")"
		}
	}
	return v
}

func checkLost(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult) Check {
	l := Check{Metric: m.name, Baseline: "-", Result: num(r.Lost), ResultValue: f64p(float64(r.Lost)), Limit: "0", OK: r.Lost == 0 || r.LostAllowed}
	if b != nil {
		l.Baseline, l.BaselineValue = num(b.Lost), f64p(float64(b.Lost))
	}
	if r.LostAllowed {
		l.Limit = "any (" + allowedLabel(r) + ")"
	}
	if !l.OK {
		l.Regression = fmt.Sprintf("%s: %s confirmed %s lost", k, num(r.Lost), plural(r.Lost, "message", "messages"))
	}
	return l
}

// sameRunReferences maps each matrix cell (the label of its
// fire-and-forget mode) to that mode's rate (modeRate: its intake, or in an
// older result its publish rate before the first fault; msg/s), when it was
// run and measured: the reference a confirm mode's
// rates are held against in compare.
func sameRunReferences(r *scenario.Result) map[string]float64 {
	refs := map[string]float64{}
	for _, m := range r.Modes {
		if v, _ := modeRate(m); m.Mode == scenario.FireAndForget && !m.NotRun && v > 0 {
			refs[label(m)] = v
		}
	}
	return refs
}

// references are the baseline's and the result's same-run reference
// rates (sameRunReferences).
type references struct{ base, res map[string]float64 }

// of returns the same-run reference rates (msg/s) of mode r's cell in the
// baseline and the result, and whether both exist: r is a confirm mode and
// both files ran the cell's fire-and-forget mode.
func (refs references) of(r scenario.ModeResult) (base, res float64, ok bool) {
	if !r.Mode.ConfirmMode() {
		return 0, 0, false
	}
	ff := r
	ff.Mode = scenario.FireAndForget
	base, bok := refs.base[label(ff)]
	res, rok := refs.res[label(ff)]
	return base, res, bok && rok
}

// checkDrop holds a rate (msg/s) to a drop of at most
// t.MaxThroughputDropPct; a baseline rate ≤ 0, or a rate either file could
// not tell (an intake_unknown), is shown as "-" and not checked. Where both files have a same-run reference (references.of)
// the drop is that of rate ÷ reference, so a slower or faster machine
// alone moves nothing.
func checkDrop(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds, refs references) Check {
	bv, bok := m.read(*b)
	rv, rok := m.read(r)
	ch := Check{Metric: m.name, Baseline: rate(bv), Result: rate(rv), BaselineValue: f64p(bv), ResultValue: f64p(rv), OK: true}
	if !rok {
		// The result could not tell (intake_unknown: a burst too short to
		// time before its fault): no figure, not a fall to 0.
		ch.Result, ch.ResultValue = "-", nil
	}
	if bv <= 0 || !bok {
		ch.Baseline, ch.BaselineValue = "-", nil
	}
	if ch.BaselineValue == nil || ch.ResultValue == nil {
		return ch
	}
	if bref, rref, ok := refs.of(r); ok {
		return checkRatioDrop(ch, m, k, bv/bref, rv/rref, t)
	}
	ch.ChangePct = change(bv, rv)
	limit := bv * (100 - t.MaxThroughputDropPct) / 100
	ch.Limit = fmt.Sprintf("≥ %s (−%s%%)", rate(limit), pct(t.MaxThroughputDropPct))
	if rv < limit {
		ch.OK = false
		ch.Regression = fmt.Sprintf("%s: %s fell %s (%s → %s msg/s), more than the %s%% allowed", k, m.says, changePctText(ch.ChangePct, true), rate(bv), rate(rv), pct(t.MaxThroughputDropPct))
	}
	return ch
}

// ReferenceName names the same-run reference of compare's rate rows.
const ReferenceName = "fire-and-forget in the same run"

// checkRatioDrop holds rate ÷ same-run reference to a drop of at most
// t.MaxThroughputDropPct: bratio and rratio are the baseline's and the
// result's ratios; ch carries both rates in msg/s.
func checkRatioDrop(ch Check, m comparedMetric, k string, bratio, rratio float64, t Thresholds) Check {
	ch.Reference, ch.BaselineRatio, ch.ResultRatio = ReferenceName, f64p(bratio), f64p(rratio)
	ch.Baseline = fmt.Sprintf("%s (%s×)", ch.Baseline, times(bratio))
	ch.Result = fmt.Sprintf("%s (%s×)", ch.Result, times(rratio))
	ch.ChangePct = change(bratio, rratio)
	limit := bratio * (100 - t.MaxThroughputDropPct) / 100
	ch.Limit = fmt.Sprintf("≥ %s× fire-and-forget (−%s%%)", times(limit), pct(t.MaxThroughputDropPct))
	if rratio < limit {
		ch.OK = false
		ch.Regression = fmt.Sprintf("%s: %s fell %s against fire-and-forget in the same run (%s× → %s×; %s → %s msg/s), more than the %s%% allowed",
			k, m.says, changePctText(ch.ChangePct, true), times(bratio), times(rratio), rate(*ch.BaselineValue), rate(*ch.ResultValue), pct(t.MaxThroughputDropPct))
	}
	return ch
}

// times formats a rate ratio to three significant digits, at least two
// decimals ("2.60", "0.0158").
func times(v float64) string {
	d := 2
	if v > 0 {
		d = max(2, 2-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// checkRise holds a latency (ms) to a rise of at most t.MaxP99RisePct over a
// measured, positive baseline.
func checkRise(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds) Check {
	ch := Check{Metric: m.name, Baseline: "-", Result: "-", OK: true}
	rv, rok := m.read(r)
	if rok {
		ch.Result, ch.ResultValue = ms(rv), f64p(rv)
	}
	bv, bok := m.read(*b)
	if !bok || bv <= 0 {
		return ch
	}
	ch.Baseline, ch.BaselineValue = ms(bv), f64p(bv)
	limit := bv * (100 + t.MaxP99RisePct) / 100
	ch.Limit = fmt.Sprintf("≤ %s (+%s%%)", ms(limit), pct(t.MaxP99RisePct))
	if rok {
		ch.ChangePct = change(bv, rv)
		if rv > limit {
			ch.OK = false
			ch.Regression = fmt.Sprintf("%s: %s rose %s (%s → %s ms), more than the %s%% allowed", k, m.says, changePctText(ch.ChangePct, false), ms(bv), ms(rv), pct(t.MaxP99RisePct))
		}
	}
	return ch
}

// checkRecovery holds a recovery time (ms) to t.MaxRecoveryMS and, against a
// measured baseline, to t.MaxRecoveryRisePct; the tighter limit wins.
func checkRecovery(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds) Check {
	ch := Check{Metric: m.name, Baseline: "-", Result: "-", OK: true}
	var limits []string
	var limit = math.Inf(1)
	if t.MaxRecoveryMS != nil {
		limit = *t.MaxRecoveryMS
		limits = append(limits, "≤ "+ms(*t.MaxRecoveryMS))
	}
	bv, bok := m.read(*b)
	if bok {
		ch.Baseline, ch.BaselineValue = ms(bv), f64p(bv)
		if t.MaxRecoveryRisePct != nil {
			rel := bv * (100 + *t.MaxRecoveryRisePct) / 100
			limit = math.Min(limit, rel)
			limits = append(limits, fmt.Sprintf("≤ %s (+%s%%)", ms(rel), pct(*t.MaxRecoveryRisePct)))
		}
	}
	ch.Limit = strings.Join(limits, ", ")
	if rv, rok := m.read(r); rok {
		ch.Result, ch.ResultValue = ms(rv), f64p(rv)
		if bok && bv > 0 {
			ch.ChangePct = change(bv, rv)
		}
		if rv > limit {
			ch.OK = false
			ch.Regression = fmt.Sprintf("%s: %s took %s ms, over the limit (%s)", k, m.says, ms(rv), ch.Limit)
		}
	}
	return ch
}

// checkShareRise holds fire-and-forget's missing share (% of sent) to a rise
// of at most t.MaxMissingRisePts points over the baseline's; the cells show
// the count and the share.
func checkShareRise(m comparedMetric, k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds) Check {
	ch := Check{Metric: m.name, Baseline: "-", Result: "-", OK: true}
	bv, bok := m.read(*b)
	rv, rok := m.read(r)
	if bok {
		ch.Baseline = fmt.Sprintf("%s (%s%%)", num(b.UnconfirmedMissing), pct(bv))
		ch.BaselineValue = f64p(float64(b.UnconfirmedMissing))
	}
	if rok {
		ch.Result = fmt.Sprintf("%s (%s%%)", num(r.UnconfirmedMissing), pct(rv))
		ch.ResultValue = f64p(float64(r.UnconfirmedMissing))
	}
	if !bok || !rok {
		return ch
	}
	d := rv - bv
	ch.ChangePts = &d
	limit := min(bv+t.MaxMissingRisePts, 100)
	ch.Limit = fmt.Sprintf("≤ %s%% of sent (+%s pts)", pct(limit), pct(t.MaxMissingRisePts))
	if rv > limit {
		ch.OK = false
		ch.Regression = fmt.Sprintf("%s: %s rose %s points (%s%% → %s%% of sent: %s → %s never delivered), more than the %s allowed", k, m.says, pct(d), pct(bv), pct(rv), num(b.UnconfirmedMissing), num(r.UnconfirmedMissing), pct(t.MaxMissingRisePts))
	}
	return ch
}

// f64p points at v, or is nil when v is not finite: a ratio or change of
// extreme figures (a rate of 5e-324 msg/s) has no JSON number.
func f64p(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// changePctText is a change in percent for a sentence, negated when neg; "an
// unmeasurable amount" when there is none (nil: not finite).
func changePctText(c *float64, neg bool) string {
	switch {
	case c == nil:
		return "an unmeasurable amount"
	case neg:
		return pct(-*c) + "%"
	}
	return pct(*c) + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func change(base, res float64) *float64 {
	return f64p((res - base) / base * 100)
}

// pct formats a percentage with at most one decimal: 20, 12.5.
func pct(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

// CompareMarkdown writes c as markdown: the outcome, every regression, then
// one table per mode (metric, baseline, result, change, limit, ok or
// REGRESSION). It returns the first error writing to w.
func CompareMarkdown(w io.Writer, c *Comparison, baseName, resName string) error {
	return sticky(w, func(w io.Writer) error { return writeCompare(w, c, baseName, resName) })
}

func writeCompare(w io.Writer, c *Comparison, baseName, resName string) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## rmqtorture compare: %s\n\n", c.Scenario)
	p("Baseline `%s`, result `%s`.\n\n", baseName, resName)
	if c.Regressed() {
		p("**REGRESSION** (%d):\n\n", len(c.Regressions))
		for _, r := range c.Regressions {
			p("- %s\n", r)
		}
	} else {
		p("**No regression.**\n")
	}
	if c.BrokerWarning != "" {
		p("\n**Warning:** %s.\n", c.BrokerWarning)
	}
	for _, n := range c.Notes {
		p("\nNote: %s\n", n)
	}
	for _, m := range c.Modes {
		p("\n### %s\n\n", m.Label)
		if m.Note != "" {
			p("%s.\n\n", capitalize(m.Note))
		}
		rows := make([][]string, 0, len(m.Checks))
		for _, ch := range m.Checks {
			chg := "-"
			switch {
			case ch.ChangePct != nil:
				chg = fmt.Sprintf("%+.1f%%", *ch.ChangePct)
			case ch.ChangePts != nil:
				chg = fmt.Sprintf("%+.1f pts", *ch.ChangePts)
			}
			ok := "ok"
			if !ch.OK {
				ok = "REGRESSION"
			}
			limit := ch.Limit
			if limit == "" {
				limit = "-"
			}
			rows = append(rows, []string{ch.Metric, ch.Baseline, ch.Result, chg, limit, ok})
		}
		if err := table(w, true, []string{"metric", "baseline", "result", "change", "limit", "status"}, rows); err != nil {
			return err
		}
	}
	return nil
}

// CompareJSON writes c as one indented JSON object: the scenario, both
// files, whether anything regressed, every regression sentence, the
// warnings (the broker warning, if any; [] when none), the notes,
// the thresholds (percent, percentage points, ms; null when off) and per
// mode its checks with the formatted cells, the figures behind them
// (baseline_value, result_value: msg/s, ms, ids; null when not measured),
// change_pct or change_pts, the limit and ok. It returns the first error
// writing to w.
func CompareJSON(w io.Writer, c *Comparison, baseName, resName string) error {
	out := struct {
		Scenario    string           `json:"scenario"`
		Baseline    string           `json:"baseline"`
		Result      string           `json:"result"`
		Regressed   bool             `json:"regressed"`
		Regressions []string         `json:"regressions"`
		Warnings    []string         `json:"warnings"`
		Notes       []string         `json:"notes"`
		Thresholds  thresholdsJSON   `json:"thresholds"`
		Modes       []ModeComparison `json:"modes"`
	}{c.Scenario, baseName, resName, c.Regressed(), nonNil(c.Regressions), warnings(c.BrokerWarning), nonNil(c.Notes),
		c.Thresholds.json(), c.Modes}
	return encodeJSON(w, out)
}

// thresholdsJSON is Thresholds as compare's JSON documents carry it.
type thresholdsJSON struct {
	MaxThroughputDropPct float64  `json:"max_throughput_drop_pct"`
	MaxP99RisePct        float64  `json:"max_p99_rise_pct"`
	MaxMissingRisePts    float64  `json:"max_missing_rise_pts"`
	MaxRecoveryMS        *float64 `json:"max_recovery_ms"`
	MaxRecoveryRisePct   *float64 `json:"max_recovery_rise_pct"`
}

func (t Thresholds) json() thresholdsJSON {
	return thresholdsJSON{t.MaxThroughputDropPct, t.MaxP99RisePct, t.MaxMissingRisePts, t.MaxRecoveryMS, t.MaxRecoveryRisePct}
}

// encodeJSON writes v as indented JSON, with <, > and & as they are.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// settingFlags are run's flags that change what a run measures (rates,
// latencies, the missing share) without changing its scenario.
var settingFlags = []string{"--rate", "--size", "--publishers", "--consumers", "--prefetch", "--window", "--kill-at", "--down", "--queue-type", "--queue-types", "--persistence", "--mode", "--image", "--nodes", "--fail-on-missing"}

// flagValues reads settingFlags' values from a command line as result.json
// records it ("rmqtorture run s --rate 2000 --size=1024"); a flag given
// without a value (--fail-on-missing) reads "true".
func flagValues(command string) map[string]string {
	v := map[string]string{}
	f := strings.Fields(command)
	for i := 0; i < len(f); i++ {
		name, val, eq := strings.Cut(f[i], "=")
		if !slices.Contains(settingFlags, name) {
			continue
		}
		switch {
		case eq:
		case i+1 < len(f) && !strings.HasPrefix(f[i+1], "-"):
			val = f[i+1]
			i++
		default:
			val = "true"
		}
		v[name] = val
	}
	return v
}

// settingNotes says where the two runs were not made alike, so a
// "regression" that only reflects another setting is read as such: the
// queue and message settings, whether faults were
// injected (--uri), and each setting flag given to one run but not the
// other, or with another value.
// runNotes says how the two runs were made differently: the orders per
// mode, then the settings (settingNotes).
func runNotes(base, res *scenario.Result) []string {
	var notes []string
	if base.Messages != res.Messages {
		notes = append(notes, fmt.Sprintf("The baseline published %s orders per mode, the result %s: rates, latencies and the missing share compare, counts do not.", num(base.Messages), num(res.Messages)))
	}
	return append(notes, settingNotes(base, res)...)
}

func settingNotes(base, res *scenario.Result) []string {
	var notes []string
	warned := BrokerWarning(base, res) != ""
	if base.Topology != res.Topology {
		notes = append(notes, fmt.Sprintf("The baseline's queue and messages were %q, the result's %q.", base.Topology, res.Topology))
	}
	if injected := func(r *scenario.Result) bool { return r.FaultsInjected == nil || *r.FaultsInjected }; injected(base) != injected(res) {
		notes = append(notes, "Only one of the two runs injected its faults (the other ran with --uri against a broker rmqtorture did not start).")
	}
	b, r := flagValues(base.Command), flagValues(res.Command)
	for _, name := range settingFlags {
		if name == "--image" && warned {
			continue // the broker warning names both images
		}
		bv, bok := b[name]
		rv, rok := r[name]
		switch {
		case bok && rok && bv != rv:
			notes = append(notes, fmt.Sprintf("The baseline ran with %s %s, the result with %s %s.", name, bv, name, rv))
		case bok && !rok:
			notes = append(notes, fmt.Sprintf("The baseline ran with %s %s, the result without it.", name, bv))
		case rok && !bok:
			notes = append(notes, fmt.Sprintf("The result ran with %s %s, the baseline without it.", name, rv))
		}
	}
	return notes
}
