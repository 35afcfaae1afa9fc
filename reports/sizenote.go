package reports

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// ordersInText finds "20,000 orders" (or "20,000 persistent orders") in
// a scenario's description: the burst size the file was written for.
var ordersInText = regexp.MustCompile(`\b(\d{1,3}(?:,\d{3})+|\d+) (?:persistent |transient )?orders\b`)

// sizeNote is what report.md adds after a description written for another
// burst size than the run's (run --messages): " (This run: 3,000 orders
// per burst, not the 20,000 the description gives.)"; "" when the
// description names no order count or the run's.
func sizeNote(r *scenario.Result) string {
	m := ordersInText.FindStringSubmatch(r.Description)
	if m == nil || r.Messages <= 0 {
		return ""
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil || n == r.Messages {
		return ""
	}
	return fmt.Sprintf(" (This run: %s orders per burst, not the %s the description gives.)", num(r.Messages), m[1])
}
