// Package reports renders a scenario.Result as a terminal table, a markdown
// report and JSON. Renderers are pure (no clock, no environment), so the same
// result always renders to the same bytes.
package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// JSON writes r as indented JSON (the result.json format, schema_version 1).
func JSON(w io.Writer, r *scenario.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

var ledgerHeader = []string{"mode", "sent", "confirmed", "lost", "nacked", "returned", "in doubt", "went in doubt", "republished", "delivered", "unconfirmed missing", "duplicates", "unexpected", "verdict"}

// label names a mode result: its mode, and its matrix cell if any.
func label(m scenario.ModeResult) string {
	if m.Cell == nil {
		return string(m.Mode)
	}
	return fmt.Sprintf("%s · %s · %s · #%d", m.Mode, m.Cell.QueueType, scenario.Persistence(m.Cell.Persistent), m.Cell.Repeat)
}

func ledgerRow(m scenario.ModeResult) []string {
	if m.NotRun {
		row := []string{label(m)}
		for range ledgerHeader[2:] {
			row = append(row, "-")
		}
		return append(row, "not run")
	}
	confirmed, lost, doubt, wentDoubt, missing := num(m.Confirmed), num(m.Lost), num(m.InDoubt), num(m.WentInDoubt), num(m.UnconfirmedMissing)
	if !m.Mode.ConfirmMode() {
		// No confirm exists in fire-and-forget: say so rather than print 0.
		confirmed, lost, doubt, wentDoubt = "n/a", "n/a", "n/a", "n/a"
	} else {
		missing = "n/a"
	}
	if m.Unverified > 0 {
		lost += fmt.Sprintf(" (%s unverified)", num(m.Unverified))
	}
	if m.LostAllowed && m.Lost > 0 {
		lost += " (transient: allowed)"
	}
	if m.InDoubtDelivered > 0 {
		doubt += fmt.Sprintf(" (%s delivered)", num(m.InDoubtDelivered))
	}
	dups := num(m.Duplicates)
	if m.Duplicates > 0 {
		dups += fmt.Sprintf(" (%s from republish)", num(m.DuplicatesFromRepublish))
	}
	return []string{label(m), num(m.Sent), confirmed, lost, num(m.Nacked), num(m.Returned), doubt, wentDoubt,
		num(m.Republished), num(m.Delivered), missing, dups, num(m.Unexpected), string(m.Verdict.Status)}
}

var speedHeader = []string{"mode", "window", "publish msg/s (before fault)", "publish msg/s (whole burst)", "absorbed msg/s", "confirm p50 ms", "confirm p99 ms", "confirm max ms", "blocked ms", "broker downtime ms", "client recovery ms", "reconnects"}

func speedRow(m scenario.ModeResult) []string {
	window := "-"
	if m.Mode.ConfirmMode() {
		window = num(m.Window)
	}
	absorbed := "-"
	if m.AbsorbedRate > 0 {
		absorbed = rate(m.AbsorbedRate)
	}
	p50, p99, max := "-", "-", "-"
	if l := m.ConfirmLatency; m.ConfirmLatencyIntended != nil && m.ConfirmLatencyIntended.Count > 0 {
		// Rate-limited: from the intended send time, marked with a dagger.
		l = *m.ConfirmLatencyIntended
		p50, p99, max = ms(l.P50)+" †", ms(l.P99)+" †", ms(l.Max)+" †"
	} else if l.Count > 0 {
		p50, p99, max = ms(l.P50), ms(l.P99), ms(l.Max)
	}
	down, rec := "-", "-"
	if m.BrokerDowntimeMS != nil {
		down = ms(*m.BrokerDowntimeMS)
	}
	if m.ClientRecoveryMS != nil {
		rec = ms(*m.ClientRecoveryMS)
	}
	blocked := "-"
	if m.BlockedMS > 0 {
		blocked = ms(m.BlockedMS)
	}
	if m.NotRun {
		row := []string{label(m)}
		for range speedHeader[1:] {
			row = append(row, "-")
		}
		return row
	}
	return []string{label(m), window, rate(m.PreFaultPublishRate), rate(m.PublishRate), absorbed, p50, p99, max, blocked, down, rec, num(m.Reconnects)}
}

func table(w io.Writer, markdown bool, header []string, rows [][]string) error {
	align := make(tw.Alignment, len(header))
	for i := range align {
		align[i] = tw.AlignRight
	}
	align[0] = tw.AlignLeft
	align[len(align)-1] = tw.AlignLeft
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// Table writes the terminal tables: the ledger and speed/recovery, one row
// per mode, then the verdict.
func Table(w io.Writer, r *scenario.Result) error {
	fmt.Fprintf(w, "%s — %s, %s orders, %s\n", r.Scenario, r.BrokerVersionOrImage(), num(r.Messages), r.Topology)
	var ledger, speed [][]string
	for _, m := range r.Modes {
		ledger = append(ledger, ledgerRow(m))
		speed = append(speed, speedRow(m))
	}
	if err := table(w, false, ledgerHeader, ledger); err != nil {
		return err
	}
	if err := table(w, false, speedHeader, speed); err != nil {
		return err
	}
	if hdr, rows := matrixRows(r); rows != nil {
		if err := table(w, false, hdr, rows); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict.Status)))
	for _, reason := range r.Verdict.Reasons {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
	return nil
}

// maxRanges is how many id ranges a report lists before summarising.
const maxRanges = 50

// Markdown writes report.md.
func Markdown(w io.Writer, r *scenario.Result) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# rmqtorture: %s\n\n", r.Scenario)
	if r.Description != "" {
		p("%s\n\n", r.Description)
	}
	p("**Verdict: %s**\n\n", strings.ToUpper(string(r.Verdict.Status)))
	for _, reason := range r.Verdict.Reasons {
		p("- %s\n", reason)
	}
	if len(r.Verdict.Reasons) > 0 {
		p("\n")
	}
	p("| run | |\n|---|---|\n")
	p("| command | `%s` |\n", r.Command)
	p("| broker | %s (image `%s`, container `%s`) |\n", r.BrokerVersionOrImage(), r.Image, r.Container)
	p("| client | %s |\n", r.Client)
	p("| tool | rmqtorture %s |\n", r.Tool)
	p("| queue | %s |\n", r.Topology)
	p("| orders | %s per mode |\n", num(r.Messages))
	p("| run id | `%s` |\n", r.RunID)
	p("| started | %s |\n", r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	p("| duration | %s s |\n", strconv.FormatFloat(r.DurationMS/1000, 'f', 1, 64))
	if r.Error != "" {
		p("| error | %s |\n", r.Error)
	}
	p("\n## Ledger\n\nEvery sent id is in exactly one of: confirmed, lost, unverified, nacked, returned, in doubt, unconfirmed delivered, unconfirmed missing.\n\n")
	var ledger, speed [][]string
	for _, m := range r.Modes {
		ledger = append(ledger, ledgerRow(m))
		speed = append(speed, speedRow(m))
	}
	if err := table(w, true, ledgerHeader, ledger); err != nil {
		return err
	}
	p("\n## Speed and recovery\n\n")
	if err := table(w, true, speedHeader, speed); err != nil {
		return err
	}
	if hdr, rows := matrixRows(r); rows != nil {
		p("\n## Matrix\n\nEach cell's runs summarised as min / median / max.\n\n")
		if err := table(w, true, hdr, rows); err != nil {
			return err
		}
	}
	p("\n*publish msg/s (before fault)*: publish calls that returned without error per second up to the fault. *absorbed msg/s*: how fast messages entered the queue (queue-depth polls), fire-and-forget only. *broker downtime*: fault → AMQP login accepted. *client recovery*: fault → first publish or confirm after reconnecting. *blocked*: time the broker held the publisher blocked (connection.blocked), included in confirm latency. *confirm ms*: from the publish call to basic.ack; † from the order's intended send time on the load.rate schedule (corrected for coordinated omission).\n")
	for i, m := range r.Modes {
		p("\n## %s\n\n", label(m))
		if m.Error != "" {
			p("Error: %s\n\n", m.Error)
		}
		p("Queue `%s`. Verdict: **%s**.\n", m.Queue, m.Verdict.Status)
		for _, reason := range m.Verdict.Reasons {
			p("- %s\n", reason)
		}
		for _, f := range m.Faults {
			p("\nFault: %s %s at %s ms (%s published, trigger %s), applied %s ms later with %s published, down %s ms", f.Action, f.Signal, ms(f.AtMS), num(f.AtPublished), f.Trigger, ms(f.InjectMS), num(f.PublishedAtInject), ms(f.DownMS))
			if f.Error != "" {
				p(" — error: %s", f.Error)
			}
			p(".\n")
		}
		if m.ConfirmLatencyIntended != nil {
			p("\nConfirm latency from intended send time (corrected for coordinated omission; load.rate schedule): %s\n", latency(*m.ConfirmLatencyIntended))
			p("\nConfirm latency from the publish call (hides time the publisher was held up): %s\n", latency(m.ConfirmLatency))
		} else {
			p("\nConfirm latency: %s\n", latency(m.ConfirmLatency))
		}
		if err := timelineSection(w, i, m); err != nil {
			return err
		}
		for _, n := range m.Notes {
			p("\nNote: %s\n", n)
		}
		if m.Stalls > 0 {
			p("\nClient stalls: %d (connected, nothing published or confirmed; not loss).\n", m.Stalls)
		}
		if m.NotPublished > 0 || m.PendingAtDeadline > 0 {
			p("\nMessage deadline: %s orders not published (the deadline passed before they left the process: safe to report as failed), %s pending at their deadline (written, unconfirmed: they may exist).\n", num(m.NotPublished), num(m.PendingAtDeadline))
		}
		idList(w, "Not published (deadline passed first)", m.IDs.NotPublished)
		if m.Redeliveries > 0 {
			p("\nRedeliveries during the drain: %s (same stored message handed out again; not duplicates).\n", num(m.Redeliveries))
		}
		for _, c := range m.ChannelCloses {
			p("\nClose reason: %s\n", c)
		}
		idList(w, "Lost (confirmed, never delivered)", m.IDs.Lost)
		idList(w, "Unverified (confirmed, queue never drained)", m.IDs.Unverified)
		idList(w, "Unconfirmed missing (fire-and-forget, never delivered)", m.IDs.UnconfirmedMissing)
		idList(w, "In doubt at the end", m.IDs.InDoubt)
		idList(w, "Nacked", m.IDs.Nacked)
		idList(w, "Returned", m.IDs.Returned)
		idList(w, "Duplicated", m.IDs.Duplicated)
		p("\n<details><summary>Timeline (%d events)</summary>\n\n| ms | event | detail |\n|---:|---|---|\n", len(m.Events))
		for _, e := range m.Events {
			p("| %s | %s | %s |\n", ms(e.AtMS), e.Kind, strings.ReplaceAll(e.Detail, "|", "\\|"))
		}
		p("\n</details>\n")
	}
	return nil
}

func idList(w io.Writer, title string, rs []metrics.Range) {
	if len(rs) == 0 {
		return
	}
	n := 0
	for _, r := range rs {
		n += r.Len()
	}
	fmt.Fprintf(w, "\n%s: %s ids (sequence numbers): ", title, num(n))
	shown := rs
	if len(shown) > maxRanges {
		shown = shown[:maxRanges]
	}
	parts := make([]string, len(shown))
	for i, r := range shown {
		parts[i] = r.String()
	}
	fmt.Fprint(w, strings.Join(parts, ", "))
	if len(rs) > maxRanges {
		fmt.Fprintf(w, " … and %d more ranges", len(rs)-maxRanges)
	}
	fmt.Fprintln(w)
}

func latency(l metrics.LatencySummary) string {
	if l.Count == 0 {
		return "none recorded (no confirms)"
	}
	return fmt.Sprintf("p50 %s ms, p90 %s ms, p99 %s ms, p99.9 %s ms, max %s ms over %s confirms", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), num(int(l.Count)))
}

// num formats an integer with thousands separators.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// rate formats msg/s without decimals, with separators.
func rate(v float64) string { return num(int(math.Round(v))) }

// ms formats milliseconds: one decimal below 100 ms, none above.
func ms(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return num(int(math.Round(v)))
}

// matrixRows summarises a matrix run: one row per mode and cell (queue
// type, persistence) with min / median / max over its repeats. nil when the
// result has no matrix cells.
func matrixRows(r *scenario.Result) ([]string, [][]string) {
	type key struct {
		mode       scenario.Mode
		queue      scenario.QueueType
		persistent bool
	}
	var order []key
	groups := map[key][]scenario.ModeResult{}
	for _, m := range r.Modes {
		if m.Cell == nil || m.NotRun {
			continue
		}
		k := key{m.Mode, m.Cell.QueueType, m.Cell.Persistent}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m)
	}
	if len(order) == 0 {
		return nil, nil
	}
	hdr := []string{"mode · queue · messages", "runs", "pass", "lost", "unconfirmed missing", "went in doubt", "duplicates", "publish msg/s (before fault)", "confirm p99 ms"}
	var rows [][]string
	for _, k := range order {
		g := groups[k]
		pass := 0
		for _, m := range g {
			if m.Verdict.Status == scenario.Pass {
				pass++
			}
		}
		stat := func(f func(scenario.ModeResult) float64, format func(float64) string) string {
			vals := make([]float64, len(g))
			for i, m := range g {
				vals[i] = f(m)
			}
			slices.Sort(vals)
			med := vals[len(vals)/2]
			if len(vals)%2 == 0 {
				med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
			}
			return fmt.Sprintf("%s / %s / %s", format(vals[0]), format(med), format(vals[len(vals)-1]))
		}
		count := func(v float64) string { return num(int(math.Round(v))) }
		lost, missing, doubt, p99 := "n/a", "n/a", "n/a", "-"
		if k.mode.ConfirmMode() {
			lost = stat(func(m scenario.ModeResult) float64 { return float64(m.Lost) }, count)
			doubt = stat(func(m scenario.ModeResult) float64 { return float64(m.WentInDoubt) }, count)
			p99 = stat(func(m scenario.ModeResult) float64 { return m.ConfirmLatency.P99 }, ms)
		} else {
			missing = stat(func(m scenario.ModeResult) float64 { return float64(m.UnconfirmedMissing) }, count)
		}
		rows = append(rows, []string{
			fmt.Sprintf("%s · %s · %s", k.mode, k.queue, scenario.Persistence(k.persistent)), num(len(g)), num(pass), lost, missing, doubt,
			stat(func(m scenario.ModeResult) float64 { return float64(m.Duplicates) }, count),
			stat(func(m scenario.ModeResult) float64 { return m.PreFaultPublishRate }, rate), p99,
		})
	}
	return hdr, rows
}
