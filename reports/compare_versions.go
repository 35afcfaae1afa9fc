package reports

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Comparing brokers (issue 13): every result names the broker it ran on
// (image, and broker_version as the broker reported it in its AMQP
// server-properties), so compare can say when a baseline and a candidate
// did not run on the same one, and compare a set of results across two
// broker versions, pairing them by scenario, mode and matrix cell.

// BrokerName names the broker r ran on: its reported version and its image,
// e.g. "RabbitMQ 4.0.5 (rmqtorture/rabbitmq:4.0-trixie)". A result without
// broker_version (written before rmqtorture recorded it, or a broker that
// did not report it) is "an unknown version".
func BrokerName(r *scenario.Result) string {
	v := r.BrokerVersion
	if v == "" {
		v = "an unknown version"
	}
	switch {
	case r.Image != "":
		return v + " (" + r.Image + ")"
	case r.URI != "":
		return v + " (a broker named with --uri)"
	}
	return v
}

// BrokerWarning says, in one sentence without a final period, that base and
// cand ran on different brokers: both broker versions known and different,
// or both images known and different. It is "" otherwise: an unknown
// version is never taken for a different one (see brokerUnknownNote).
func BrokerWarning(base, cand *scenario.Result) string {
	versions := base.BrokerVersion != "" && cand.BrokerVersion != "" && base.BrokerVersion != cand.BrokerVersion
	images := base.Image != "" && cand.Image != "" && base.Image != cand.Image
	if !versions && !images {
		return ""
	}
	return fmt.Sprintf("baseline ran %s, candidate %s: differences may be the broker's, not your change", BrokerName(base), BrokerName(cand))
}

// brokerUnknownNote says which side's broker version is unknown when no
// broker warning was given, so "same broker" is not read into silence;
// cand names the candidate side ("result" or "candidate").
func brokerUnknownNote(base, res *scenario.Result, cand string) string {
	if BrokerWarning(base, res) != "" {
		return ""
	}
	switch {
	case base.BrokerVersion == "" && res.BrokerVersion == "":
		return fmt.Sprintf("The baseline's and the %s's broker versions are unknown (no broker_version in their result.json): compare cannot tell whether both ran the same RabbitMQ, so it does not warn.", cand)
	case base.BrokerVersion == "":
		return fmt.Sprintf("The baseline's broker version is unknown (no broker_version in its result.json): compare cannot tell whether it ran the %s's %s, so it does not warn.", cand, res.BrokerVersion)
	case res.BrokerVersion == "":
		return fmt.Sprintf("The %s's broker version is unknown (no broker_version in its result.json): compare cannot tell whether it ran the baseline's %s, so it does not warn.", cand, base.BrokerVersion)
	}
	return ""
}

// NamedResult is a result and the file it was read from.
type NamedResult struct {
	File   string
	Result *scenario.Result
}

// Change statuses: how a row of a cross-version comparison ends.
const (
	StatusOK         = "ok"         // within its threshold, or the same on both sides
	StatusChanged    = "changed"    // a count that differs; no threshold holds it (the verdict does)
	StatusRegression = "REGRESSION" // failed its threshold and not accepted
	StatusAccepted   = "accepted"   // differs or failed, and the user accepted it (Because says why)
)

// Change is one row of a cross-version comparison: one field of one mode
// (and matrix cell) in the baseline and the candidate.
type Change struct {
	Mode  string `json:"mode"`  // mode, and cell if any, as in the report tables
	Field string `json:"field"` // as result.json names it (AcceptFields)
	// Metric is the row's name in the table, e.g. "confirm p99 ms".
	Metric    string `json:"metric"`
	Baseline  string `json:"baseline"`  // formatted; "-" when not measured
	Candidate string `json:"candidate"` // formatted; "-" when not measured
	// BaselineValue and CandidateValue are the figures behind them (msg/s,
	// ms, ids; for deliveries_per_message the mean deliveries per
	// message); nil when not a number or not measured.
	BaselineValue  *float64 `json:"baseline_value"`
	CandidateValue *float64 `json:"candidate_value"`
	// Ratio is candidate ÷ baseline for rates, latencies, recovery and
	// deliveries per message; nil when either is missing or the baseline
	// is 0.
	Ratio *float64 `json:"ratio"`
	// ChangePts is candidate − baseline in percentage points, for the
	// missing share; nil otherwise.
	ChangePts *float64 `json:"change_pts,omitempty"`
	Limit     string   `json:"limit"`
	Status    string   `json:"status"`
	// Sentence says what differs or regressed, naming the scenario and
	// mode; "" for an ok row.
	Sentence string `json:"sentence,omitempty"`
	// Because is why an accepted row is accepted: the accept entry's
	// reason and place (FILE:LINE), or the version scope that stated it.
	Because string `json:"because,omitempty"`

	mode scenario.Mode
}

// PairComparison is one scenario's baseline and candidate side by side.
type PairComparison struct {
	Scenario        string   `json:"scenario"`
	BaselineFile    string   `json:"baseline_file"`
	CandidateFile   string   `json:"candidate_file"`
	BaselineBroker  string   `json:"baseline_broker"`
	CandidateBroker string   `json:"candidate_broker"`
	Changes         []Change `json:"changes"`
}

// Unpaired is a scenario, or a mode and cell of one, that only one side has.
type Unpaired struct {
	Scenario string `json:"scenario"`
	Mode     string `json:"mode,omitempty"` // "": the whole scenario
	Side     string `json:"side"`           // "baseline" or "candidate": the side that has it
	File     string `json:"file"`
}

// VersionsComparison is a set of results compared with a set of baseline
// results, paired by scenario, mode and matrix cell: what
// `rmqtorture compare --across-versions` reports.
type VersionsComparison struct {
	Baseline, Candidate string // how the two sides were named on the command line
	// AcrossVersions: the comparison is across broker versions on purpose
	// (--across-versions), so a broker difference is the point, not a
	// warning.
	AcrossVersions bool
	Thresholds     Thresholds
	Pairs          []PairComparison
	Unpaired       []Unpaired
	// Warnings are the broker warnings of the pairs (BrokerWarning),
	// each once.
	Warnings []string
	// Regressions and Accepted are the sentences of the REGRESSION and
	// accepted rows (and of a scenario only the baseline has), in table
	// order; an accepted sentence ends with its reason.
	Regressions []string
	Accepted    []string
	Notes       []string
}

// Regressed reports whether a regression was not accepted.
func (v *VersionsComparison) Regressed() bool { return len(v.Regressions) > 0 }

// CompareVersions compares the candidate results with the baseline results
// under t, pairing them by scenario and, within a scenario, by mode and
// matrix cell. A side holding several results of one scenario uses its
// newest (started_at) and says so in a note. Per pair of modes it holds
// the candidate to compare's checks (verdict, lost, missing share,
// throughput, confirm p99, recovery: see Compare), shows every ledger count
// that differs (in doubt, nacked, returned, duplicates, dead-lettered,
// deliveries per message: these decide nothing themselves; where a run is
// deterministic the scenario's expect holds them exactly, through the
// verdict) and throughput and latency as ratios.
//
// A failed check or a changed count is accepted, and fails nothing, when an
// accept entry names its scenario, mode (or none) and field, or when either
// result's version_scope states that field for that mode ("MODE.FIELD").
// A scenario or mode of the baseline missing from the candidate is a
// regression (field "present"); one only the candidate has is listed as
// unpaired and fails nothing.
func CompareVersions(baseName string, bases []NamedResult, candName string, cands []NamedResult, t Thresholds, accepts []Accept) *VersionsComparison {
	vc := &versionsComparer{v: &VersionsComparison{Baseline: baseName, Candidate: candName, Thresholds: t},
		t: t, accepts: accepts, used: make([]bool, len(accepts))}
	v := vc.v
	b, bnotes := byScenario("baseline", bases)
	c, cnotes := byScenario("candidate", cands)
	v.Notes = append(bnotes, cnotes...)
	for _, scen := range sortedKeys(b, c) {
		bn, inB := b[scen]
		cn, inC := c[scen]
		switch {
		case !inC:
			vc.onlyInBaseline(scen, bn)
		case !inB:
			v.Unpaired = append(v.Unpaired, Unpaired{Scenario: scen, Side: "candidate", File: cn.File})
		default:
			v.Pairs = append(v.Pairs, vc.pair(scen, bn, cn))
		}
	}
	vc.noteUnusedAccepts()
	return v
}

// versionsComparer is one CompareVersions: the comparison it builds, and
// which accept entries matched a difference.
type versionsComparer struct {
	v       *VersionsComparison
	t       Thresholds
	accepts []Accept
	used    []bool // per accept entry: it matched a difference
}

// accept marks ch accepted when an accept entry names its scenario, mode
// (or none) and field, or when either result's version scope states it.
func (vc *versionsComparer) accept(scen string, ch *Change, base, cand *scenario.Result) {
	for i, a := range vc.accepts {
		if a.matches(scen, ch.mode, ch.Field) {
			vc.used[i] = true
			ch.Status, ch.Because = StatusAccepted, fmt.Sprintf("%s (%s)", a.Because, a.Where())
			return
		}
	}
	if because, ok := acceptedByScopes(*ch, base, cand); ok {
		ch.Status, ch.Because = StatusAccepted, because
	}
}

// record lists ch's sentence among the regressions or the accepted.
func (vc *versionsComparer) record(ch Change) {
	switch ch.Status {
	case StatusRegression:
		vc.v.Regressions = append(vc.v.Regressions, ch.Sentence)
	case StatusAccepted:
		vc.v.Accepted = append(vc.v.Accepted, ch.Sentence+": accepted: "+ch.Because)
	}
}

// onlyInBaseline records scenario scen, which only the baseline ran: a
// regression unless an accept entry for its whole scenario accepts
// "present".
func (vc *versionsComparer) onlyInBaseline(scen string, bn NamedResult) {
	vc.v.Unpaired = append(vc.v.Unpaired, Unpaired{Scenario: scen, Side: "baseline", File: bn.File})
	ch := Change{Field: "present", Metric: "scenario", Baseline: "run", Candidate: "missing", Status: StatusRegression,
		Sentence: fmt.Sprintf("%s: only in the baseline (%s), missing from the candidate", scen, bn.File)}
	for i, a := range vc.accepts {
		if a.Scenario == scen && a.Mode == "" && a.Field == "present" {
			vc.used[i] = true
			ch.Status, ch.Because = StatusAccepted, fmt.Sprintf("%s (%s)", a.Because, a.Where())
			break
		}
	}
	vc.record(ch)
}

// pair compares scenario scen's baseline and candidate results mode by
// mode, recording warnings, notes, unpaired modes and what regressed or
// was accepted.
func (vc *versionsComparer) pair(scen string, bn, cn NamedResult) PairComparison {
	v := vc.v
	p := PairComparison{Scenario: scen, BaselineFile: bn.File, CandidateFile: cn.File, Changes: []Change{},
		BaselineBroker: BrokerName(bn.Result), CandidateBroker: BrokerName(cn.Result)}
	if w := BrokerWarning(bn.Result, cn.Result); w != "" && !slices.Contains(v.Warnings, w) {
		v.Warnings = append(v.Warnings, w)
	}
	if n := brokerUnknownNote(bn.Result, cn.Result, "candidate"); n != "" {
		v.Notes = append(v.Notes, scen+": "+n)
	}
	for _, n := range runNotes(bn.Result, cn.Result) {
		v.Notes = append(v.Notes, scen+": "+n)
	}
	got := map[string]scenario.ModeResult{}
	for _, m := range cn.Result.Modes {
		got[modeKey(m)] = m
	}
	seen := map[string]bool{}
	for _, bm := range bn.Result.Modes {
		k := modeKey(bm)
		seen[k] = true
		cm, ok := got[k]
		var rows []Change
		switch {
		case !ok || (cm.NotRun && !bm.NotRun):
			why := "missing from the candidate"
			if ok {
				why = "not run in the candidate"
			}
			rows = []Change{{Mode: k, mode: bm.Mode, Field: "present", Metric: "mode", Baseline: "run", Candidate: strings.TrimSuffix(why, " from the candidate"),
				Status: StatusRegression, Sentence: fmt.Sprintf("%s: %s: %s", scen, k, why)}}
			if !ok {
				v.Unpaired = append(v.Unpaired, Unpaired{Scenario: scen, Mode: k, Side: "baseline", File: bn.File})
			}
		case bm.NotRun:
			rows = modeChanges(scen, k, nil, cm, vc.t)
		default:
			rows = modeChanges(scen, k, &bm, cm, vc.t)
		}
		for i := range rows {
			if rows[i].Status == StatusRegression || rows[i].Status == StatusChanged {
				vc.accept(scen, &rows[i], bn.Result, cn.Result)
			}
			vc.record(rows[i])
		}
		p.Changes = append(p.Changes, rows...)
	}
	for _, cm := range cn.Result.Modes {
		if k := modeKey(cm); !seen[k] {
			v.Unpaired = append(v.Unpaired, Unpaired{Scenario: scen, Mode: k, Side: "candidate", File: cn.File})
		}
	}
	return p
}

// noteUnusedAccepts notes each accept entry that matched no difference.
func (vc *versionsComparer) noteUnusedAccepts() {
	for i, a := range vc.accepts {
		if !vc.used[i] {
			mode := string(a.Mode)
			if mode == "" {
				mode = "any mode"
			}
			vc.v.Notes = append(vc.v.Notes, fmt.Sprintf("%s: the accept entry (%s, %s, %s) matched no difference.", a.Where(), a.Scenario, mode, a.Field))
		}
	}
}

// byScenario indexes a side's results by scenario; of several results of
// one scenario it keeps the newest and notes the others.
func byScenario(side string, rs []NamedResult) (map[string]NamedResult, []string) {
	out := map[string]NamedResult{}
	var skipped = map[string][]string{}
	for _, r := range rs {
		prev, ok := out[r.Result.Scenario]
		switch {
		case !ok:
			out[r.Result.Scenario] = r
		case r.Result.StartedAt.After(prev.Result.StartedAt):
			skipped[r.Result.Scenario] = append(skipped[r.Result.Scenario], prev.File)
			out[r.Result.Scenario] = r
		default:
			skipped[r.Result.Scenario] = append(skipped[r.Result.Scenario], r.File)
		}
	}
	var notes []string
	for _, s := range sortedStrings(mapKeys(skipped)) {
		files := skipped[s]
		slices.Sort(files)
		notes = append(notes, fmt.Sprintf("The %s holds %d results of %s: compared the newest, %s; left out %s.", side, len(files)+1, s, out[s].File, strings.Join(files, ", ")))
	}
	return out, notes
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortedKeys(a, b map[string]NamedResult) []string {
	keys := mapKeys(a)
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// changedCounts are the ledger counts a cross-version comparison shows when
// they differ: none is held to a threshold (the scenario's expect holds
// them, through the verdict), so a difference is "changed".
var changedCounts = []struct {
	field, name string
	read        func(scenario.ModeResult) int
}{
	{"in_doubt", "in doubt", func(m scenario.ModeResult) int { return m.InDoubt }},
	{"nacked", "nacked", func(m scenario.ModeResult) int { return m.Nacked }},
	{"returned", "returned", func(m scenario.ModeResult) int { return m.Returned }},
	{"duplicates", "duplicates", func(m scenario.ModeResult) int { return m.Duplicates }},
	{"dead_lettered", "dead-lettered", func(m scenario.ModeResult) int { return m.DeadLettered }},
}

// modeChanges compares one mode of scen: compare's checks (as Compare
// makes them) and, against a baseline, every count in changedCounts and
// deliveries per message that differ. b is nil when the baseline did not
// run the mode.
func modeChanges(scen, k string, b *scenario.ModeResult, r scenario.ModeResult, t Thresholds) []Change {
	var out []Change
	for _, m := range comparedMetrics {
		if m.kind.needsBaseline() && b == nil {
			continue
		}
		if m.shown == nil || m.shown(b, r) {
			// Both versions ran on one machine in one run: their rates
			// compare as measured, with no same-run reference.
			ch := m.check(k, b, r, t, references{})
			c := Change{Mode: k, mode: r.Mode, Field: m.field, Metric: m.name, Baseline: ch.Baseline, Candidate: ch.Result,
				BaselineValue: ch.BaselineValue, CandidateValue: ch.ResultValue, ChangePts: ch.ChangePts, Limit: ch.Limit, Status: StatusOK}
			if m.kind == maxDrop || m.kind == maxRise || m.kind == maxRecovery {
				c.Ratio = ratio(ch.BaselineValue, ch.ResultValue)
			}
			if !ch.OK {
				c.Status, c.Sentence = StatusRegression, scen+": "+ch.Regression
			}
			out = append(out, c)
		}
		// The counts follow the missing share, before the rates.
		if b != nil && m.kind == maxShareRise {
			out = append(out, countChanges(scen, k, *b, r)...)
		}
	}
	return out
}

// countChanges lists the counts and the deliveries per message that differ
// between b and r.
func countChanges(scen, k string, b, r scenario.ModeResult) []Change {
	var out []Change
	for _, c := range changedCounts {
		bv, rv := c.read(b), c.read(r)
		if bv == rv {
			continue
		}
		out = append(out, Change{Mode: k, mode: r.Mode, Field: c.field, Metric: c.name, Baseline: num(bv), Candidate: num(rv),
			BaselineValue: f64p(float64(bv)), CandidateValue: f64p(float64(rv)), Status: StatusChanged,
			Sentence: fmt.Sprintf("%s: %s: %s %s → %s", scen, k, c.name, num(bv), num(rv))})
	}
	if bd, rd := deliveriesPerMessage(b), deliveriesPerMessage(r); !maps.Equal(bd, rd) {
		bs, bm := deliveriesSummary(bd)
		rs, rm := deliveriesSummary(rd)
		out = append(out, Change{Mode: k, mode: r.Mode, Field: "deliveries_per_message", Metric: "deliveries per message", Baseline: bs, Candidate: rs,
			BaselineValue: bm, CandidateValue: rm, Ratio: ratio(bm, rm), Status: StatusChanged,
			Sentence: fmt.Sprintf("%s: %s: deliveries per message %s → %s", scen, k, bs, rs)})
	}
	if bx, rx := xDeathAtPark(b), xDeathAtPark(r); !maps.Equal(bx, rx) {
		bs, bm := deliveriesSummary(bx)
		rs, rm := deliveriesSummary(rx)
		out = append(out, Change{Mode: k, mode: r.Mode, Field: "x_death_count_at_park", Metric: "x-death count at park", Baseline: bs, Candidate: rs,
			BaselineValue: bm, CandidateValue: rm, Status: StatusChanged,
			Sentence: fmt.Sprintf("%s: %s: x-death count at park %s → %s", scen, k, bs, rs)})
	}
	if bs, rs := reasonsText(b.DeadLetterReasons), reasonsText(r.DeadLetterReasons); bs != rs {
		out = append(out, Change{Mode: k, mode: r.Mode, Field: "dead_letter_reason", Metric: "dead-letter reason", Baseline: bs, Candidate: rs,
			Status: StatusChanged, Sentence: fmt.Sprintf("%s: %s: dead-letter reason %s → %s", scen, k, bs, rs)})
	}
	return out
}

// xDeathAtPark is the retry consumers' x-death count → parked messages
// histogram (nil without them).
func xDeathAtPark(m scenario.ModeResult) map[string]int {
	if m.Consumers == nil {
		return nil
	}
	return m.Consumers.XDeathCountAtPark
}

// acceptedByScopes reports whether the version scopes that judged base and
// cand accept ch, and why: only when each side's scope states the field (a
// value one side states says nothing of the other's).
func acceptedByScopes(ch Change, base, cand *scenario.Result) (string, bool) {
	if base == nil || cand == nil || ch.mode == "" || !base.VersionScope.States(ch.mode, ch.Field) || !cand.VersionScope.States(ch.mode, ch.Field) {
		return "", false
	}
	cs := cand.VersionScope
	return fmt.Sprintf("stated for %s by the candidate's version scope %q: %s", cs.BrokerVersion, cs.When, cs.Because), true
}

// reasonsText renders dead-letter reasons (x-death reason → ids):
// "delivery_limit" when every id carried one reason, else each reason
// with its count ("delivery_limit 60, rejected 40"); "-" for none.
func reasonsText(reasons map[string]int) string {
	var keys []string
	for r, n := range reasons {
		if n > 0 {
			keys = append(keys, r)
		}
	}
	switch len(keys) {
	case 0:
		return "-"
	case 1:
		return keys[0]
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, r := range keys {
		parts[i] = fmt.Sprintf("%s %s", r, num(reasons[r]))
	}
	return strings.Join(parts, ", ")
}

// deliveriesPerMessage is the live consumers' deliveries → messages
// histogram (nil without live consumers).
func deliveriesPerMessage(m scenario.ModeResult) map[string]int {
	if m.Consumers == nil {
		return nil
	}
	return m.Consumers.DeliveriesPerMessage
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// deliveriesSummary renders deliveries_per_message (deliveries → messages):
// "4 (100 messages)" when every message was delivered as often, else
// "1–3, mean 1.2 (4,000 messages)"; and the mean, nil when empty.
func deliveriesSummary(d map[string]int) (string, *float64) {
	if len(d) == 0 {
		return "-", nil
	}
	lo, hi, msgs, total := math.MaxInt, 0, 0, 0
	for k, n := range d {
		dv, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		lo, hi = min(lo, dv), max(hi, dv)
		msgs += n
		total += dv * n
	}
	if msgs == 0 {
		return "-", nil
	}
	mean := float64(total) / float64(msgs)
	if lo == hi {
		return fmt.Sprintf("%s (%s %s)", num(lo), num(msgs), plural(msgs, "message", "messages")), &mean
	}
	return fmt.Sprintf("%s–%s, mean %s (%s %s)", num(lo), num(hi), ratioText(mean), num(msgs), plural(msgs, "message", "messages")), &mean
}

func ratio(b, r *float64) *float64 {
	if b == nil || r == nil || *b <= 0 {
		return nil
	}
	q := *r / *b
	return &q
}

// ratioText formats a ratio or a mean: two significant decimals below 10
// (0.81, 1.2), whole numbers with separators above (7,900).
func ratioText(q float64) string {
	if q >= 10 {
		return num(int(math.Round(q)))
	}
	s := strconv.FormatFloat(q, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// sideBrokers names the brokers a side's compared results ran on, each once.
func (v *VersionsComparison) sideBrokers(candidate bool) string {
	var names []string
	for _, p := range v.Pairs {
		n := p.BaselineBroker
		if candidate {
			n = p.CandidateBroker
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "no paired result"
	}
	return strings.Join(names, "; ")
}

// CompareVersionsMarkdown writes v as markdown: the two sides and their brokers,
// the outcome and every unaccepted regression, every accepted difference
// with its reason, the broker warnings (unless AcrossVersions), the
// unpaired results, the notes, then per scenario a "what changed" table
// (mode, field as --accept names it, baseline, candidate, change, limit,
// status). It returns the
// first error writing to w.
func CompareVersionsMarkdown(w io.Writer, v *VersionsComparison) error {
	return sticky(w, func(w io.Writer) error { return writeVersions(w, v) })
}

func writeVersions(w io.Writer, v *VersionsComparison) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	title := "compare"
	if v.AcrossVersions {
		title = "compare across versions"
	}
	p("## rmqtorture %s\n\n", title)
	p("Baseline `%s`: %s.\n", v.Baseline, v.sideBrokers(false))
	p("Candidate `%s`: %s.\n\n", v.Candidate, v.sideBrokers(true))
	if v.Regressed() {
		p("**REGRESSION** (%d):\n\n", len(v.Regressions))
		for _, r := range v.Regressions {
			p("- %s\n", r)
		}
	} else {
		p("**No regression.**\n")
	}
	if len(v.Accepted) > 0 {
		p("\nAccepted (%d):\n\n", len(v.Accepted))
		for _, a := range v.Accepted {
			p("- %s\n", a)
		}
	}
	if !v.AcrossVersions {
		for _, wn := range v.Warnings {
			p("\n**Warning:** %s.\n", wn)
		}
	}
	if len(v.Unpaired) > 0 {
		p("\nUnpaired (%d):\n\n", len(v.Unpaired))
		for _, u := range v.Unpaired {
			what := u.Scenario
			if u.Mode != "" {
				what += ": " + u.Mode
			}
			p("- %s: only in the %s (`%s`)\n", what, u.Side, u.File)
		}
	}
	for _, n := range v.Notes {
		p("\nNote: %s\n", n)
	}
	if len(v.Pairs) > 0 {
		p("\n### What changed\n")
	}
	for _, pc := range v.Pairs {
		p("\n#### %s\n\n", pc.Scenario)
		p("Baseline `%s` on %s, candidate `%s` on %s.\n\n", pc.BaselineFile, pc.BaselineBroker, pc.CandidateFile, pc.CandidateBroker)
		rows := make([][]string, 0, len(pc.Changes))
		for _, ch := range pc.Changes {
			chg := "-"
			switch {
			case ch.Ratio != nil:
				chg = "×" + ratioText(*ch.Ratio)
			case ch.ChangePts != nil:
				chg = fmt.Sprintf("%+.1f pts", *ch.ChangePts)
			case ch.BaselineValue != nil && ch.CandidateValue != nil && ch.Status != StatusOK:
				chg = fmt.Sprintf("%+d", int(math.Round(*ch.CandidateValue-*ch.BaselineValue)))
			}
			limit, status := ch.Limit, ch.Status
			if limit == "" {
				limit = "-"
			}
			if status == StatusAccepted {
				status = "accepted: " + ch.Because
			}
			rows = append(rows, []string{ch.Mode, ch.Field, ch.Baseline, ch.Candidate, chg, limit, status})
		}
		if err := table(w, true, []string{"mode", "field", "baseline", "candidate", "change", "limit", "status"}, rows); err != nil {
			return err
		}
	}
	return nil
}

// CompareVersionsJSON writes v as one indented JSON object: both sides as named,
// across_versions, whether an unaccepted regression remains, the
// regression and accepted sentences, the broker warnings ([] when none),
// the unpaired results, the notes, the thresholds (percent, percentage
// points, ms; null when off) and per scenario its pair of files, brokers
// and changes (figures in msg/s, ms, ids; ratio = candidate ÷ baseline).
func CompareVersionsJSON(w io.Writer, v *VersionsComparison) error {
	pairs := v.Pairs
	if pairs == nil {
		pairs = []PairComparison{}
	}
	unpaired := v.Unpaired
	if unpaired == nil {
		unpaired = []Unpaired{}
	}
	out := struct {
		Baseline       string           `json:"baseline"`
		Candidate      string           `json:"candidate"`
		AcrossVersions bool             `json:"across_versions"`
		Regressed      bool             `json:"regressed"`
		Regressions    []string         `json:"regressions"`
		Accepted       []string         `json:"accepted"`
		Warnings       []string         `json:"warnings"`
		Unpaired       []Unpaired       `json:"unpaired"`
		Notes          []string         `json:"notes"`
		Thresholds     thresholdsJSON   `json:"thresholds"`
		Pairs          []PairComparison `json:"pairs"`
	}{v.Baseline, v.Candidate, v.AcrossVersions, v.Regressed(), nonNil(v.Regressions), nonNil(v.Accepted), nonNil(v.Warnings), unpaired, nonNil(v.Notes),
		v.Thresholds.json(), pairs}
	return encodeJSON(w, out)
}

// warnings is the JSON list of a single comparison's broker warning.
func warnings(w string) []string {
	if w == "" {
		return []string{}
	}
	return []string{w}
}
