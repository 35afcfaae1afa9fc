package reports

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwarp"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Width is the display columns every line of Headline and Summary fits in.
const Width = 100

// Headline writes the answer first, every line at most Width display
// columns: the scenario and broker; one line per mode (per matrix cell,
// over its runs) with delivered/sent, confirmed messages lost (the
// broker's promise broken), fire-and-forget orders missing (published
// without error, never delivered: the publisher's risk) with their share
// of those sent, orders never published (an interrupted burst, a deadline),
// duplicates, and the cost: the publish rate before the
// first fault in msg/s with its share of the fastest mode's, and the p99
// confirm latency in ms; a warning per mode that lost orders silently;
// then the verdict with its reasons. It returns the first error writing
// to w.
func Headline(w io.Writer, r *scenario.Result) error {
	return sticky(w, func(w io.Writer) error { writeHeadline(w, r); return nil })
}

// Summary writes the default terminal output of run: the Headline, then a
// compact table of the ledger and speed (summaryTable), then the broker log
// findings and, per mode, a partition that outlived the faults; every line at most Width display columns. Table writes every
// column. It returns the first error writing to w.
func Summary(w io.Writer, r *scenario.Result) error {
	return sticky(w, func(w io.Writer) error {
		writeHeadline(w, r)
		if err := summaryTable(w, r); err != nil {
			return err
		}
		for _, f := range r.BrokerLogFindings {
			line := fmt.Sprintf("broker log: %s × %s", f.Signature, num(f.Count))
			if f.Messages > 0 {
				line += fmt.Sprintf(" (%s dropped messages)", num(f.Messages))
			}
			writeWrapped(w, "", line+": "+f.Meaning, 2)
		}
		for _, m := range r.Modes {
			if len(m.PartitionedAtDrain) > 0 {
				writeWrapped(w, "", fmt.Sprintf("partition: %s: the cluster was still partitioned when the drain began (%s); "+
					"RabbitMQ's default partition handling keeps the sides apart until a node restarts (rabbitmq-server#17319)",
					m.Mode, scenario.PartitionText(m.PartitionedAtDrain)), 2)
			}
		}
		return nil
	})
}

// faultColumns are the speed table's columns that only a fault (or a
// reconnect) fills: left out when no mode had one.
var faultColumns = []string{"broker downtime ms", "client recovery ms", "reconnects"}

// hadFault reports whether any mode of r had a fault, broker downtime, a
// client recovery or a reconnect.
func hadFault(r *scenario.Result) bool {
	return slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool {
		return len(m.Faults) > 0 || m.BrokerDowntimeMS != nil || m.ClientRecoveryMS != nil || m.Reconnects > 0
	})
}

// speedTable is the speed table's header and one row per mode, without
// faultColumns when no mode had a fault.
func speedTable(r *scenario.Result) ([]string, [][]string) {
	var rows [][]string
	for _, m := range r.Modes {
		rows = append(rows, speedRow(m))
	}
	if hadFault(r) {
		return speedHeader, rows
	}
	keep := func(cells []string) []string {
		var out []string
		for i, c := range cells {
			if !slices.Contains(faultColumns, speedHeader[i]) {
				out = append(out, c)
			}
		}
		return out
	}
	for i, row := range rows {
		rows[i] = keep(row)
	}
	return keep(speedHeader), rows
}

// headlineBlock writes the headline into report.md, first: as a text block,
// so its lines keep their alignment.
func headlineBlock(w io.Writer, r *scenario.Result) {
	var buf bytes.Buffer
	writeHeadline(&buf, r)
	fmt.Fprintf(w, "%s\n\n", fence(strings.TrimSuffix(buf.String(), "\n")))
}

// runGroup is what one headline line speaks for: one mode's burst, or a
// matrix cell's runs of one mode.
type runGroup struct {
	label  string
	mode   scenario.Mode
	runs   []scenario.ModeResult // the runs that ran
	notRun int
	matrix bool
}

// runGroups groups r's modes: each mode result on its own, or, in a matrix
// run, by mode, queue type and persistence.
func runGroups(r *scenario.Result) []runGroup {
	var gs []runGroup
	at := map[string]int{}
	for _, m := range r.Modes {
		g := runGroup{label: string(m.Mode), mode: m.Mode}
		if m.Cell != nil {
			g.label = fmt.Sprintf("%s · %s · %s", m.Mode, m.Cell.QueueType, scenario.Persistence(m.Cell.Persistent))
			g.matrix = true
			if i, ok := at[g.label]; ok {
				gs[i].add(m)
				continue
			}
			at[g.label] = len(gs)
		}
		g.add(m)
		gs = append(gs, g)
	}
	return gs
}

func (g *runGroup) add(m scenario.ModeResult) {
	if m.NotRun {
		g.notRun++
		return
	}
	g.runs = append(g.runs, m)
}

// figures are a group's counts summed over its runs, how many runs had
// each kind of loss, and the median rate and p99 of its runs.
type figures struct {
	sent, delivered, lost, missing, dups, inDoubt, nacked, returned             int
	unverified, unexpected, deadLettered, lostDeadLetter, lostDeadLetterAllowed int
	notPublished                                                                int // orders the burst never published (interrupted, past a deadline)
	lostRuns, missingRuns, dupRuns                                              int
	allowed                                                                     []string // why lost confirmed messages fail nothing, distinct
	rate                                                                        float64  // median intake msg/s (modeRate); 0 when not measured
	unknown                                                                     string   // why a run's intake rate cannot be told (the first run's that says), when no run has one
	p99                                                                         float64  // median confirm p99 ms
	hasP99                                                                      bool
}

func (g runGroup) figures() figures {
	var f figures
	var rates, p99s []float64
	for _, m := range g.runs {
		f.sent += m.Sent
		f.delivered += m.Delivered
		f.lost += m.Lost
		f.missing += m.UnconfirmedMissing
		f.dups += m.Duplicates
		f.inDoubt += m.InDoubt
		f.nacked += m.Nacked
		f.returned += m.Returned
		f.unverified += m.Unverified
		f.unexpected += m.Unexpected
		f.notPublished += m.NotPublished
		f.deadLettered += m.DeadLettered
		f.lostDeadLetter += m.LostDeadLetterPath
		if m.DeadLetterLossAllowed {
			f.lostDeadLetterAllowed += m.LostDeadLetterPath
		}
		if m.Lost > 0 {
			f.lostRuns++
			if m.LostAllowed && !slices.Contains(f.allowed, allowedLabel(m)) {
				f.allowed = append(f.allowed, allowedLabel(m))
			}
		}
		if m.UnconfirmedMissing > 0 {
			f.missingRuns++
		}
		if m.Duplicates > 0 {
			f.dupRuns++
		}
		if v, why := modeRate(m); v > 0 {
			rates = append(rates, v)
		} else if why != "" && f.unknown == "" {
			f.unknown = why
		}
		if p, ok := confirmP99(m); ok {
			p99s = append(p99s, p)
		}
	}
	f.rate = median(rates)
	if f.rate > 0 {
		f.unknown = ""
	}
	f.p99, f.hasP99 = median(p99s), len(p99s) > 0
	return f
}

// modeRate is m's cost figure in msg/s: what the broker took in over the
// burst's fault-free time (ModeResult.IntakeRate), or why that cannot be
// told; in a result written before intake was measured, the publish rate
// before the first fault.
func modeRate(m scenario.ModeResult) (float64, string) {
	switch {
	case m.IntakeRate > 0 || m.IntakeUnknown != "":
		return m.IntakeRate, m.IntakeUnknown
	default:
		return m.PreFaultPublishRate, ""
	}
}

// measuredIntake reports whether r's rates are intake rates (modeRate):
// results written before they were measured have publish rates.
func measuredIntake(r *scenario.Result) bool {
	return slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return m.IntakeRate > 0 || m.IntakeUnknown != "" })
}

// lostAllowed reports whether every lost confirmed message of the group
// fails nothing.
func (f figures) lostAllowed() bool { return f.lost > 0 && len(f.allowed) > 0 }

// confirmP99 is a mode's p99 confirm latency in ms: from the intended send
// time when the load was rate-limited, else from the publish call; false
// when no confirm was measured (or the mode has none).
func confirmP99(m scenario.ModeResult) (float64, bool) {
	if !m.Mode.ConfirmMode() {
		return 0, false
	}
	if l := m.ConfirmLatencyIntended; l != nil && l.Count > 0 {
		return l.P99, true
	}
	if m.ConfirmLatency.Count > 0 {
		return m.ConfirmLatency.P99, true
	}
	return 0, false
}

// intendedLatency reports whether some mode's p99 (confirmP99) is timed
// from the intended send time rather than the publish call.
func intendedLatency(r *scenario.Result) bool {
	return slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool {
		l := m.ConfirmLatencyIntended
		return m.Mode.ConfirmMode() && l != nil && l.Count > 0
	})
}

// median of vals (the mean of the middle two for an even count); 0 for none.
func median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(vals))
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// percent formats part as a percentage of whole: whole numbers from 10%,
// one decimal below; never "0%" or "100%" for a part that is neither none
// nor all. "-" when whole is not positive.
func percent(part, whole float64) string {
	if whole <= 0 {
		return "-"
	}
	p := 100 * part / whole
	r := math.Round(p*10) / 10
	switch {
	case part > 0 && r == 0:
		return "<0.1%"
	case part < whole && math.Round(p) >= 100:
		return ">99%"
	case r < 10:
		return fmt.Sprintf("%.1f%%", r)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// runsText says in how many of n runs something happened.
func runsText(k, n int) string {
	return fmt.Sprintf("in %d of %d runs", k, n)
}

// accounting is a group's ledger in words, one phrase each:
// delivered/sent, then lost (confirm modes) or missing (fire-and-forget),
// what else happened to the ids, duplicates.
func (g runGroup) accounting(f figures) []string {
	multi := len(g.runs) > 1
	parts := []string{fmt.Sprintf("%s/%s delivered", num(f.delivered), num(f.sent))}
	if f.notPublished > 0 {
		// sent is what was published: say the burst fell short of its size.
		parts = append(parts, num(f.notPublished)+" never published")
	}
	if g.mode.ConfirmMode() {
		lost := num(f.lost) + " lost"
		if multi && f.lost > 0 {
			lost = fmt.Sprintf("%s lost %s", num(f.lost), runsText(f.lostRuns, len(g.runs)))
		}
		if f.lostAllowed() {
			lost += " (allowed: " + strings.Join(trimAllowed(f.allowed), "; ") + ")"
		}
		parts = append(parts, lost)
	} else {
		missing := fmt.Sprintf("%s missing", num(f.missing))
		if f.missing > 0 {
			missing += fmt.Sprintf(" (%s)", percent(float64(f.missing), float64(f.sent)))
			if multi {
				missing = fmt.Sprintf("%s missing %s (%s)", num(f.missing), runsText(f.missingRuns, len(g.runs)), percent(float64(f.missing), float64(f.sent)))
			}
		}
		parts = append(parts, missing)
	}
	for _, c := range []struct {
		n    int
		what string
	}{{f.unverified, "unverified (the queue was never drained)"}, {f.inDoubt, "in doubt"}, {f.nacked, "nacked"}, {f.returned, "returned"},
		{f.deadLettered, "dead-lettered"}, {f.unexpected, "unexpected"}} {
		if c.n > 0 {
			parts = append(parts, num(c.n)+" "+c.what)
		}
	}
	if f.lostDeadLetter > 0 {
		path := num(f.lostDeadLetter) + " lost on the dead-letter path"
		if f.lostDeadLetterAllowed == f.lostDeadLetter {
			path += " (allowed)"
		}
		parts = append(parts, path)
	}
	dups := num(f.dups) + " duplicates"
	if f.dups == 1 {
		dups = "1 duplicate"
	}
	if multi && f.dups > 0 {
		dups += " " + runsText(f.dupRuns, len(g.runs))
	}
	return append(parts, dups)
}

// landing says what the mode's first fault found under way when it took
// effect: "kill landed with 312 in flight, 3,600 to publish" (in flight:
// awaiting their confirm; fire-and-forget awaits none, so only what was
// left to publish). "" without a fault, or for a result written before
// in-flight counts were recorded.
func landing(mode scenario.Mode, m scenario.ModeResult, messages int) string {
	i := slices.IndexFunc(m.Faults, func(f scenario.FaultRecord) bool { return f.Error == "" && f.InFlightAtInject != nil })
	if i < 0 {
		return ""
	}
	f := m.Faults[i]
	left := num(max(messages-f.PublishedAtInject, 0)) + " to publish"
	if !mode.ConfirmMode() {
		return fmt.Sprintf("%s landed with %s", f.Action, left)
	}
	return fmt.Sprintf("%s landed with %s in flight, %s", f.Action, num(*f.InFlightAtInject), left)
}

// trimAllowed drops the "allowed: " prefix of allowedLabel's texts.
func trimAllowed(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(l, "allowed"), ": ")
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// cost is a group's publish rate with its share of the fastest, and its
// p99 confirm latency; "" when neither was measured.
func (f figures) cost(fastest float64) string {
	var parts []string
	if f.rate > 0 {
		parts = append(parts, fmt.Sprintf("%s msg/s (%s)", rate(f.rate), percent(f.rate, fastest)))
	} else if f.unknown != "" {
		parts = append(parts, "msg/s: cannot tell")
	}
	if f.hasP99 {
		parts = append(parts, "p99 "+ms(f.p99)+" ms")
	}
	return strings.Join(parts, ", ")
}

func writeHeadline(w io.Writer, r *scenario.Result) {
	gs := runGroups(r)
	matrix := slices.ContainsFunc(gs, func(g runGroup) bool { return g.matrix })
	per := "mode"
	if matrix {
		per = "run"
	}
	// The broker stays whole: on the title's line if it fits, else below.
	title, broker := fmt.Sprintf("%s: %s orders per %s; %s", r.Scenario, num(r.Messages), per, r.Topology), r.BrokerVersionOrImage()
	if p := r.LoadPart; p != nil && !p.Drain {
		title = fmt.Sprintf("%s: %s of split run %s, ids %s–%s of %s orders per %s; %s", r.Scenario, p, p.RunID, num(p.First), num(p.End-1), num(r.Messages), per, r.Topology)
	} else if p != nil {
		title = fmt.Sprintf("%s: drain of split run %s (%d load parts of %s orders per %s); %s", r.Scenario, p.RunID, p.Parts, num(r.Messages), per, r.Topology)
	}
	if twwidth.Width(title+"; "+broker) <= Width {
		fmt.Fprintln(w, title+"; "+broker)
	} else {
		writeWrapped(w, "", title, 2)
		writeWrapped(w, "  on ", broker, 2)
	}
	figs := make([]figures, len(gs))
	fastest, labelW := 0.0, 0
	for i, g := range gs {
		figs[i] = g.figures()
		fastest = max(fastest, figs[i].rate)
		labelW = max(labelW, twwidth.Width(g.label))
	}
	for i, g := range gs {
		f := figs[i]
		accounting, cost := g.accounting(f), f.cost(fastest)
		if len(g.runs) == 0 {
			accounting, cost = []string{"not run"}, ""
		}
		if !g.matrix {
			if len(g.runs) == 1 {
				if l := landing(g.mode, g.runs[0], r.Messages); l != "" {
					accounting = append(accounting, l)
				}
			}
			writeModeLine(w, g.label, labelW+2, accounting, cost)
			continue
		}
		head := fmt.Sprintf("%s, %d runs", g.label, len(g.runs))
		if len(g.runs) == 1 {
			head = g.label + ", 1 run"
		}
		if g.notRun > 0 {
			head += fmt.Sprintf(" (%d not run)", g.notRun)
		}
		fmt.Fprintln(w, cut(head+":"))
		writeModeLine(w, "", 2, accounting, cost)
	}
	if fastest > 0 || slices.ContainsFunc(figs, func(f figures) bool { return f.unknown != "" }) {
		writeWrapped(w, "", "("+legend(r, matrix)+")", 2)
	}
	for i, g := range gs {
		if figs[i].unknown != "" {
			writeWrapped(w, "", fmt.Sprintf("%s: cannot tell its msg/s: %s", g.label, figs[i].unknown), 2)
		}
	}
	missingWarnings(w, gs, figs, r.Verdict.Status == scenario.Fail)
	for _, warning := range r.Warnings {
		writeWrapped(w, "warning: ", warning, 2)
	}
	if r.Error != "" {
		writeWrapped(w, "error: ", r.Error, 2)
	}
	versionScopeLines(w, r)
	verdict := "verdict: " + strings.ToUpper(string(r.Verdict.Status))
	switch {
	case r.Verdict.Status == scenario.Pass && r.LoadPart != nil:
		verdict += fmt.Sprintf(": %s did its share; the run's verdict is `rmqtorture check`'s", r.LoadPart)
	case r.Verdict.Status == scenario.Pass && len(r.Verdict.Reasons) == 0:
		verdict += ": the broker broke no promise and every expectation held"
		if silent := silentMissing(r, "%[1]s: %[4]s missing without an error"); len(silent) > 0 {
			verdict += "; but " + strings.Join(silent, "; ")
		}
	}
	writeWrapped(w, "", verdict, 2)
	for _, reason := range r.Verdict.Reasons {
		writeWrapped(w, "  - ", reason, 4)
	}
}

// legend explains the headline's msg/s and p99 figures (per cell when
// matrix).
func legend(r *scenario.Result, matrix bool) string {
	before := " before the first fault"
	if !hadFault(r) {
		before = ""
	}
	latency := "confirm latency"
	if intendedLatency(r) {
		// Not the broker's confirm time: a publisher behind its rate
		// schedule adds its delay (coordinated omission).
		latency = "confirm latency from each order's intended send time on the rate schedule"
	}
	what := "publish rate" + before
	if measuredIntake(r) {
		// Not the publish calls: fire-and-forget's return once the bytes
		// are in the client's socket buffer (issue 25).
		what = "what the broker took in" + before + ", in basic.acks (fire-and-forget: messages into the queue)"
	}
	if matrix {
		return "counts: summed over a cell's runs; msg/s (" + what + ", % of the fastest cell's) and p99 " + latency + ": the median of its runs"
	}
	return "msg/s: " + what + ", as % of the fastest mode's; p99: " + latency
}

// missingWarnings warns of every group that lost fire-and-forget orders
// silently (figs[i] are gs[i]'s figures), pointing at --fail-on-missing
// unless the run failed already.
func missingWarnings(w io.Writer, gs []runGroup, figs []figures, failed bool) {
	for i, g := range gs {
		f := figs[i]
		if g.mode.ConfirmMode() || f.missing == 0 {
			continue
		}
		var text string
		if len(g.runs) > 1 {
			text = fmt.Sprintf("%s: orders missing %s (%s of %s, %s): published without an error, never delivered", g.label, runsText(f.missingRuns, len(g.runs)), num(f.missing), num(f.sent), percent(float64(f.missing), float64(f.sent)))
		} else {
			text = fmt.Sprintf("%s: %s of %s orders (%s) missing: published without an error, never delivered", g.label, num(f.missing), num(f.sent), percent(float64(f.missing), float64(f.sent)))
		}
		if !failed {
			text += " (--fail-on-missing fails the run on it)"
		}
		writeWrapped(w, "warning: ", text, 2)
	}
}

// writeWrapped writes prefix and text wrapped at spaces to Width display
// columns (greedy: as many words on a line as fit), the lines after the
// first indented by indent spaces; a word wider than a line is cut with "…".
func writeWrapped(w io.Writer, prefix, text string, indent int) {
	line, empty := prefix, true
	for _, word := range twwarp.SplitWords(text) {
		if !empty && twwidth.Width(line)+1+twwidth.Width(word) > Width {
			fmt.Fprintln(w, cut(line))
			line, empty = strings.Repeat(" ", indent), true
		}
		if !empty {
			line += " "
		}
		line, empty = line+word, false
	}
	fmt.Fprintln(w, cut(line))
}

// writeModeLine writes a headline line: label padded to pad columns, the
// accounting's phrases joined by commas, then the cost after a semicolon;
// a phrase that would pass Width starts a new line, indented by pad.
func writeModeLine(w io.Writer, label string, pad int, phrases []string, cost string) {
	line := label + strings.Repeat(" ", max(0, pad-twwidth.Width(label)))
	indent := strings.Repeat(" ", pad)
	add := func(sep, phrase string) {
		if line != indent && twwidth.Width(line+sep+phrase) > Width {
			fmt.Fprintln(w, cut(line+strings.TrimSpace(sep)))
			line = indent
			sep = ""
		}
		line += sep + phrase
	}
	for i, p := range phrases {
		sep := ", "
		if i == 0 {
			sep = ""
		}
		add(sep, p)
	}
	if cost != "" {
		add("; ", cost)
	}
	fmt.Fprintln(w, cut(line))
}

// cut cuts a line wider than Width display columns, ending it with "…".
func cut(line string) string {
	if twwidth.Width(line) <= Width {
		return line
	}
	return twwidth.Truncate(line, Width-1, "…")
}

// column is one column of the compact table: its header, its cells, and
// when it may be left out (optional: when every cell is "0", "n/a" or "-";
// na: when every cell is "n/a" or "-"; drop > 0: in that order while the
// table is wider than Width).
type column struct {
	header   string
	right    bool
	cells    []string
	optional bool
	na       bool
	drop     int
}

// empty reports whether the column says nothing worth its width.
func (c column) empty() bool {
	return !slices.ContainsFunc(c.cells, func(s string) bool {
		return s != "n/a" && s != "-" && (s != "0" || !c.optional)
	})
}

// summaryTable writes the compact table: one row per mode (per matrix cell
// over its runs) with the ledger's main columns and the speed that matters;
// columns that say nothing are left out, and then, while it is wider than
// Width, the least needed ones.
func summaryTable(w io.Writer, r *scenario.Result) error {
	if len(r.Modes) == 0 {
		return nil // no mode ran: the headline says why
	}
	var cols []column
	var notes []string
	if slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return m.Cell != nil }) {
		cols, notes = matrixColumns(r)
	} else {
		cols, notes = modeColumns(r)
	}
	cols = slices.DeleteFunc(cols, func(c column) bool { return (c.optional || c.na) && c.empty() })
	var out []byte
	for {
		var err error
		if out, err = renderCompact(cols); err != nil {
			return err
		}
		if widest(out) <= Width {
			break
		}
		i := -1
		for j, c := range cols {
			if c.drop > 0 && (i < 0 || c.drop < cols[i].drop) {
				i = j
			}
		}
		if i < 0 {
			break // nothing left to drop: lines are cut below
		}
		cols = slices.Delete(cols, i, i+1)
	}
	fmt.Fprintln(w) // a blank line between the headline and the table
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		fmt.Fprintln(w, cut(l))
	}
	for _, n := range notes {
		writeWrapped(w, "", n, 2)
	}
	return nil
}

// widest is the display width of out's widest line.
func widest(out []byte) int {
	n := 0
	for l := range strings.SplitSeq(string(out), "\n") {
		n = max(n, twwidth.Width(l))
	}
	return n
}

// renderCompact renders cols without borders, a line under the header,
// trailing spaces trimmed.
func renderCompact(cols []column) ([]byte, error) {
	var buf bytes.Buffer
	header := make([]string, len(cols))
	align := make(tw.Alignment, len(cols))
	for i, c := range cols {
		header[i] = c.header
		align[i] = tw.AlignLeft
		if c.right {
			align[i] = tw.AlignRight
		}
	}
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Settings: tw.Settings{Separators: tw.Separators{BetweenColumns: tw.Off, ShowHeader: tw.On}, Lines: tw.Lines{ShowHeaderLine: tw.On}},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
	)
	t.Header(header)
	for i := range cols[0].cells {
		row := make([]string, len(cols))
		for j, c := range cols {
			row[j] = c.cells[i]
		}
		if err := t.Append(row); err != nil {
			return nil, err
		}
	}
	if err := t.Render(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for l := range strings.SplitSeq(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		out.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	return out.Bytes(), nil
}

// allowedMark marks a lost count that fails nothing, explained under the
// table.
const allowedMark = "*"

// modeColumns are the compact table's columns for a run without a matrix,
// and the note under it.
func modeColumns(r *scenario.Result) ([]column, []string) {
	cols := []column{
		{header: "mode"},
		{header: "sent", right: true, drop: 6},
		{header: "confirmed", right: true, optional: true, drop: 3},
		{header: "lost", right: true, na: true},
		{header: "nacked", right: true, optional: true, drop: 2},
		{header: "returned", right: true, optional: true, drop: 1},
		{header: "in doubt", right: true, optional: true, drop: 4},
		{header: "delivered", right: true},
		{header: "missing", right: true, na: true},
		{header: "duplicates", right: true, optional: true, drop: 5},
		{header: "msg/s", right: true, na: true, drop: 8},
		{header: "p99 ms", right: true, na: true, drop: 7},
		{header: "verdict"},
	}
	var allowed []string
	for _, m := range r.Modes {
		var row []string
		if m.NotRun {
			row = []string{label(m), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "not run"}
		} else {
			confirmed, lost, doubt, missing, p99 := num(m.Confirmed), num(m.Lost), num(m.InDoubt), "n/a", "-"
			if !m.Mode.ConfirmMode() {
				confirmed, lost, doubt, missing, p99 = "n/a", "n/a", "n/a", num(m.UnconfirmedMissing), "n/a"
			} else if v, ok := confirmP99(m); ok {
				p99 = ms(v)
			}
			if m.Lost > 0 && m.LostAllowed {
				lost += allowedMark
				if l := allowedLabel(m); !slices.Contains(allowed, l) {
					allowed = append(allowed, l)
				}
			}
			speed := "-"
			if v, why := modeRate(m); v > 0 {
				speed = rate(v)
			} else if why != "" {
				speed = "?"
			}
			row = []string{label(m), num(m.Sent), confirmed, lost, num(m.Nacked), num(m.Returned), doubt, num(m.Delivered),
				missing, num(m.Duplicates), speed, p99, modeVerdictCell(m)}
		}
		for i := range cols {
			cols[i].cells = append(cols[i].cells, row[i])
		}
	}
	var notes []string
	if len(allowed) > 0 {
		notes = append(notes, allowedMark+" lost but "+strings.Join(allowed, "; "))
	}
	return cols, notes
}

// matrixColumns are the compact table's columns for a matrix run: one row
// per cell over its runs, and the note under it.
func matrixColumns(r *scenario.Result) ([]column, []string) {
	cols := []column{
		{header: "mode · queue · messages"},
		{header: "runs", right: true},
		{header: "pass", right: true},
		{header: "lost", right: true, na: true},
		{header: "missing", right: true, na: true},
		{header: "in doubt", right: true, optional: true, drop: 2},
		{header: "duplicates", right: true, optional: true, drop: 1},
		{header: "msg/s", right: true, na: true, drop: 4},
		{header: "p99 ms", right: true, na: true, drop: 3},
	}
	var allowed []string
	for _, g := range runGroups(r) {
		pass := 0
		worst := map[string]int{}
		for _, m := range g.runs {
			if m.Verdict.Status == scenario.Pass {
				pass++
			}
			worst["lost"] = max(worst["lost"], m.Lost)
			worst["missing"] = max(worst["missing"], m.UnconfirmedMissing)
			worst["doubt"] = max(worst["doubt"], m.InDoubt)
			worst["dups"] = max(worst["dups"], m.Duplicates)
		}
		f := g.figures()
		runs := num(len(g.runs))
		if g.notRun > 0 {
			runs += fmt.Sprintf(" (+%d not run)", g.notRun)
		}
		lost, missing, doubt, p99, speed := num(worst["lost"]), "n/a", num(worst["doubt"]), "-", "-"
		if f.lostAllowed() {
			lost += allowedMark
			for _, a := range f.allowed {
				if !slices.Contains(allowed, a) {
					allowed = append(allowed, a)
				}
			}
		}
		if !g.mode.ConfirmMode() {
			lost, missing, doubt, p99 = "n/a", num(worst["missing"]), "n/a", "n/a"
		} else if f.hasP99 {
			p99 = ms(f.p99)
		}
		if f.rate > 0 {
			speed = rate(f.rate)
		}
		if len(g.runs) == 0 {
			lost, missing, doubt, p99, speed = "-", "-", "-", "-", "-"
			worst["dups"] = 0
		}
		row := []string{g.label, runs, num(pass), lost, missing, doubt, num(worst["dups"]), speed, p99}
		if len(g.runs) == 0 {
			row[6] = "-"
		}
		for i := range cols {
			cols[i].cells = append(cols[i].cells, row[i])
		}
	}
	speedWhat := "publish rate before the first fault"
	if measuredIntake(r) {
		speedWhat = "what the broker took in before the first fault"
	}
	notes := []string{"per cell: lost, missing, in doubt and duplicates are the most in one run; msg/s (" + speedWhat + ") and p99 ms (confirm latency) the median of its runs"}
	if len(allowed) > 0 {
		notes = append(notes, allowedMark+" lost but allowed: "+strings.Join(trimAllowed(allowed), "; "))
	}
	return cols, notes
}

// silentMissing says, per fire-and-forget mode (or matrix cell) that lost
// orders without an error, how many of how many (summed over its runs),
// with form's verbs: "%[1]s" the label, "%[2]s" missing, "%[3]s" sent,
// "%[4]s" the share. A pass says the broker broke no promise;
// fire-and-forget asks for none, so every place that says pass also says
// this (issue 25: "pass" beside 88 % silent loss read as safe).
func silentMissing(r *scenario.Result, form string) []string {
	type sum struct{ missing, sent int }
	var order []string
	sums := map[string]*sum{}
	for _, m := range r.Modes {
		if m.Mode.ConfirmMode() || m.NotRun || m.UnconfirmedMissing == 0 {
			continue
		}
		l := label(m)
		if sums[l] == nil {
			sums[l] = &sum{}
			order = append(order, l)
		}
		sums[l].missing += m.UnconfirmedMissing
		sums[l].sent += m.Sent
	}
	out := make([]string, len(order))
	for i, l := range order {
		s := sums[l]
		out[i] = fmt.Sprintf(form, l, num(s.missing), num(s.sent), percent(float64(s.missing), float64(s.sent)))
	}
	return out
}

// modeVerdictCell is a mode's verdict as the table shows it: a pass of a
// fire-and-forget mode that lost orders without an error says how many
// ("pass, 88% missing").
func modeVerdictCell(m scenario.ModeResult) string {
	if m.Verdict.Status == scenario.Pass && !m.Mode.ConfirmMode() && m.UnconfirmedMissing > 0 && m.Sent > 0 {
		return "pass, " + percent(float64(m.UnconfirmedMissing), float64(m.Sent)) + " missing"
	}
	return string(m.Verdict.Status)
}
