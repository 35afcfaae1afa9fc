package cmd

// Version-scoped expectations on real brokers of two versions: the shipped
// delivery-limit scenario states what 3.10 and 4.3 each do (expect.versions),
// each run is judged by the scope its broker's reported version matches, and
// a planted change (4.0's behaviour expected on 4.3) fails naming the
// version and the behaviour.

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"github.com/rmqtorture/rmqtorture/scenario"
)

const (
	image310 = "rmqtorture/rabbitmq:3.10-bookworm" // RabbitMQ 3.10.8
	image43  = "rmqtorture/rabbitmq:4.3-forky"     // RabbitMQ 4.3.6
)

// needImages fails the test when a broker image is missing, naming the
// command that builds it.
func needImages(t *testing.T, images ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker images")
	}
	cli := dockerClient(t)
	for _, img := range images {
		if _, err := cli.ImageInspect(context.Background(), img); err != nil {
			t.Fatalf("%s: %v (build it: scripts/build-broker-image.sh all)", img, err)
		}
	}
}

// TestDeliveryLimitPerBrokerVersion runs delivery-limit (x-delivery-limit
// 3, a consumer that nacks with requeue and gives up at the 30th delivery)
// on 3.10.8 (--image) and on 4.3.6: 3.10 counts nack with requeue, so the
// broker dead-letters every order at its 4th delivery (x-death reason
// delivery_limit); 4.3 does not (rabbitmq-server PR #13885), so the
// consumer rejects every order at its 30th (rejected). Both pass, each by
// its own scope. On the same 4.3 broker, a scenario expecting 4.0's
// behaviour on every version fails, naming the version and the behaviour.
// The two 4.3 runs share one container (--container), to boot 4.3 once.
func TestDeliveryLimitPerBrokerVersion(t *testing.T) {
	needImages(t, image310, image43)
	f, err := scenario.LoadFile("../scenarios.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(f.Scenarios, func(s scenario.Scenario) bool { return s.Name == "delivery-limit" })
	scopes := f.Scenarios[i].Expect.Versions

	check := func(t *testing.T, r *scenario.Result, version string, scope scenario.VersionScope, perMessage int, reason string) {
		t.Helper()
		want := &scenario.AppliedVersionScope{BrokerVersion: version, When: scope.When.RabbitMQ, Because: scope.Because,
			Stated: []string{"confirm-window.deliveries_per_message", "confirm-window.dead_letter_reason"}}
		if r.BrokerVersion != version || !reflect.DeepEqual(r.VersionScope, want) {
			t.Fatalf("broker %q scope %+v, want %+v", r.BrokerVersion, r.VersionScope, want)
		}
		m := mode(t, r, scenario.ConfirmWindow)
		c := m.Consumers
		gaveUp := 0
		if reason == "rejected" {
			gaveUp = 100
		}
		if m.DeadLettered != 100 || c == nil || !reflect.DeepEqual(c.DeliveriesPerMessage, map[string]int{strconv.Itoa(perMessage): 100}) ||
			c.Deliveries != 100*perMessage || c.GaveUp != gaveUp ||
			!reflect.DeepEqual(m.DeadLetterReasons, map[string]int{reason: 100}) || !reflect.DeepEqual(m.XDeathCounts, map[string]int{"1": 100}) {
			t.Fatalf("dead-lettered %d, consumers %+v, reasons %v, x-death counts %v", m.DeadLettered, c, m.DeadLetterReasons, m.XDeathCounts)
		}
	}

	t.Run("3.10", func(t *testing.T) {
		r := runScenario(t, "delivery-limit", "--image", image310)
		check(t, r, "RabbitMQ 3.10.8", scopes[0], 4, "delivery_limit")
	})

	t.Run("4.3", func(t *testing.T) {
		cli := dockerClient(t)
		ctx := context.Background()
		name := "rmqt-versions-" + strconv.Itoa(os.Getpid())
		amqpPort := nat.Port("5672/tcp")
		created, err := cli.ContainerCreate(ctx, &container.Config{Image: image43, Hostname: name, ExposedPorts: nat.PortSet{amqpPort: {}}},
			&container.HostConfig{PortBindings: nat.PortMap{amqpPort: {{HostIP: "127.0.0.1", HostPort: strconv.Itoa(freeLocalPort(t))}}}}, nil, nil, name)
		if err != nil {
			t.Fatal(err)
		}
		removeAtEnd(t, cli, created.ID)
		if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "run", "delivery-limit", "-f", "../scenarios.yaml", "--out", t.TempDir(), "--container", name)
		t.Log("\n" + stdout)
		if code != ExitPass {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		r := readResult(t, stdout)
		if r.Verdict.Status != scenario.Pass {
			t.Fatalf("verdict %+v", r.Verdict)
		}
		check(t, r, "RabbitMQ 4.3.6", scopes[1], 30, "rejected")

		// The planted change: 4.0's behaviour expected on 4.3.
		code, stdout, stderr = runCLI(t, "run", "planted-4-0-everywhere", "-f", "testdata/planted-version.yaml", "--out", t.TempDir(), "--container", name)
		t.Log("\n" + stdout)
		if code != ExitFail {
			t.Fatalf("exit %d, want %d (failed verdict)\n%s", code, ExitFail, stderr)
		}
		r = readResult(t, stdout)
		const scope = " (expected on RabbitMQ >=3.10: planted, RabbitMQ 4.0.5's behaviour everywhere)"
		want := []string{
			"confirm-window: RabbitMQ 4.3.6: deliveries_per_message: expected every message at exactly 4, got 30×20 (value×messages)" + scope,
			"confirm-window: RabbitMQ 4.3.6: dead_letter_reason: expected every dead-lettered message to carry x-death reason delivery_limit, got rejected×20 (reason×messages)" + scope,
		}
		if r.Verdict.Status != scenario.Fail || !slices.Equal(r.Verdict.Reasons, want) {
			t.Fatalf("verdict %s %q\nwant %q", r.Verdict.Status, r.Verdict.Reasons, want)
		}
	})
}
