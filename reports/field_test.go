package reports

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The field cases in the ledger row and the id lists: ids nacked at some
// point and published again (rabbitmq-server PR #4888), and ids deleted
// with the queue that came back (rabbitmq-server#12366).
func TestFieldCasesRendered(t *testing.T) {
	m := scenario.ModeResult{Mode: scenario.ConfirmWindow,
		Counts: metrics.Counts{Sent: 10, Confirmed: 3, Nacked: 1, WentNacked: 4, Republished: 3, Resurrected: 6, Delivered: 9, Deliveries: 12, Duplicates: 3, DuplicatesFromRepublish: 3},
		IDs: metrics.IDSets{Nacked: []metrics.Range{{First: 3, Last: 3}}, WentNacked: []metrics.Range{{First: 0, Last: 3}}, Republished: []metrics.Range{{First: 0, Last: 2}},
			Resurrected: []metrics.Range{{First: 4, Last: 9}}}}
	row := ledgerRow(m)
	i, j := slices.Index(ledgerHeader, "nacked"), slices.Index(ledgerHeader, "unexpected")
	if row[i] != "1 (4 went nacked)" || row[j] != "0 (+6 resurrected)" {
		t.Fatalf("nacked %q, unexpected %q", row[i], row[j])
	}
	var buf bytes.Buffer
	idLists(&buf, m)
	for _, want := range []string{
		"Resurrected (deleted with the queue by delete-queue, delivered anyway: rabbitmq-server#12366): 6 ids (sequence numbers): 4-9",
		"Went nacked (basic.nack at some point): 4 ids (sequence numbers): 0-3",
		"Republished (not the same set as went in doubt or nacked): 3 ids (sequence numbers): 0-2",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("id lists lack %q:\n%s", want, buf.String())
		}
	}
	md := render(t, Markdown, &scenario.Result{Modes: []scenario.ModeResult{m}})
	if !bytes.Contains(md, []byte(", resurrected (deleted with the queue by the scenario's delete-queue, delivered anyway from the queue declared again: rabbitmq-server#12366; shown beside *unexpected*). Figures are")) {
		t.Errorf("markdown names no resurrected class:\n%s", md)
	}
	m.IDs.Republished = m.IDs.WentNacked
	buf.Reset()
	idLists(&buf, m)
	if !strings.Contains(buf.String(), "\nRepublished: exactly the ids that were nacked.\n") {
		t.Errorf("id lists:\n%s", buf.String())
	}
}
