package reports

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// ordersCount finds the first "N orders" or "N persistent orders" in a
// scenario description (N with thousands separators, as the shipped
// descriptions write it).
var ordersCount = regexp.MustCompile(`\b(\d{1,3}(?:,\d{3})*|\d+)( persistent)? orders\b`)

// description is r.Description with the order count it states made true:
// a scenario file describes its own load.messages, so a run with another
// count (--messages) would open its report with the wrong number. The
// first "N orders" that differs from r.Messages becomes the real count,
// with the file's figure after it ("2,000 orders (20,000 in the scenario
// file)"); other figures in the description stay as written.
func description(r *scenario.Result) string {
	d := r.Description
	loc := ordersCount.FindStringSubmatchIndex(d)
	if loc == nil || r.Messages <= 0 {
		return d
	}
	said, err := strconv.Atoi(strings.ReplaceAll(d[loc[2]:loc[3]], ",", ""))
	if err != nil || said == r.Messages {
		return d
	}
	return d[:loc[2]] + num(r.Messages) + d[loc[3]:loc[1]] + fmt.Sprintf(" (%s in the scenario file)", d[loc[2]:loc[3]]) + d[loc[1]:]
}

// fieldWords names, for readers, the fields an older result.json may lack
// (Result.NotRecorded), by their path with mode indexes removed.
var fieldWords = []struct{ suffix, words string }{
	{"/seed", "the seed"},
	{"/confirm_latency_ms/p99_9", "p99.9 confirm latency"},
	{"/confirm_latency_from_intended_ms/p99_9", "p99.9 confirm latency from the intended send time"},
	{"/consumers/end_to_end_latency_ms/p99_9", "p99.9 end-to-end latency"},
	{"/dead_lettered", "dead-lettered counts"},
	{"/retry_deliveries", "retry deliveries"},
}

// olderResultLine writes, for a result read from an older schema_version,
// a list item saying so and naming what the rmqtorture that wrote it did
// not record (shown as "not recorded", never as 0 where the report prints
// the figure).
func olderResultLine(w io.Writer, r *scenario.Result) {
	if r.MigratedFrom == 0 {
		return
	}
	fmt.Fprintf(w, "- **Result file:** written as schema_version %d, read as %d", r.MigratedFrom, r.SchemaVersion)
	var names []string
	for _, f := range fieldWords {
		for _, p := range r.NotRecorded {
			if strings.HasSuffix(p, f.suffix) {
				names = append(names, f.words)
				break
			}
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(w, "; not recorded by the rmqtorture that wrote it: %s", strings.Join(names, ", "))
	}
	fmt.Fprintln(w)
}
