package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func scopedResult(scope *scenario.AppliedVersionScope) *scenario.Result {
	r := result(confirmMode())
	r.Scenario, r.BrokerVersion, r.VersionScope = "delivery-limit", "RabbitMQ 4.3.6", scope
	r.Verdict = scenario.Verdict{Status: scenario.Pass}
	return r
}

// The scope that judged a run and its finding are shown beside the
// verdict, in the terminal, the wide table and report.md, never as a
// reason of it.
func TestVersionScopeShown(t *testing.T) {
	r := scopedResult(&scenario.AppliedVersionScope{BrokerVersion: "RabbitMQ 4.3.6", When: ">=4.3", Because: "rabbitmq-server PR #13885",
		Finding: "nack with requeue never reaches x-delivery-limit", Stated: []string{"confirm-window.deliveries_per_message"}})
	render := func(f func(w *bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	summary := render(func(b *bytes.Buffer) error { return Summary(b, r) })
	for _, want := range []string{
		"version: RabbitMQ 4.3.6 matches expect.versions \">=4.3\", which states\n  confirm-window.deliveries_per_message\nbroker finding",
		"broker finding: RabbitMQ 4.3.6 (expected on RabbitMQ >=4.3; a broker finding, not an rmqtorture\n  failure): nack with requeue never reaches x-delivery-limit\nverdict: PASS",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	wide := render(func(b *bytes.Buffer) error { return Table(b, r) })
	if want := "broker finding: RabbitMQ 4.3.6 (expected on RabbitMQ >=4.3; a broker finding, not an rmqtorture failure): nack with requeue never reaches x-delivery-limit\n"; !strings.Contains(wide, want) {
		t.Errorf("table lacks %q:\n%s", want, wide)
	}
	md := render(func(b *bytes.Buffer) error { return Markdown(b, r) })
	want := "\n## Broker version\n\nRabbitMQ 4.3.6 matches `expect.versions` range `>=4.3`: the run was judged with the expectations stated for it (`confirm-window.deliveries_per_message`) laid over the unscoped ones. Source: rabbitmq-server PR #13885\n\n" +
		"**Broker finding** (how RabbitMQ 4.3.6 differs from RabbitMQ's documentation; not an rmqtorture failure): nack with requeue never reaches x-delivery-limit\n"
	if !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}

	// No scope matched (a warning says so) or none stated: nothing shown.
	for _, scope := range []*scenario.AppliedVersionScope{{BrokerVersion: "RabbitMQ 4.3.6"}, nil} {
		r := scopedResult(scope)
		for _, out := range []string{render(func(b *bytes.Buffer) error { return Summary(b, r) }), render(func(b *bytes.Buffer) error { return Markdown(b, r) })} {
			if strings.Contains(out, "Broker version") || strings.Contains(out, "broker finding") || strings.Contains(out, "version: ") {
				t.Errorf("scope %+v shown:\n%s", scope, out)
			}
		}
	}
}

func TestXDeathLine(t *testing.T) {
	var b bytes.Buffer
	xDeathLine(&b, scenario.ModeResult{DeadLetterReasons: map[string]int{"rejected": 30, "delivery_limit": 70}, XDeathCounts: map[string]int{"1": 100}})
	want := "\nx-death of the dead-lettered ids (latest entry; https://www.rabbitmq.com/docs/dlx#effects): reason `delivery_limit` × 70, `rejected` × 30; count `1` × 100.\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	if xDeathLine(&b, scenario.ModeResult{}); b.Len() != 0 {
		t.Fatalf("printed %q without x-death", b.String())
	}
}
