package docker

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// waitReadyWithin runs WaitReady with a 60 s timeout and returns its error
// and how long it took.
func waitReadyWithin(c *Container) (error, time.Duration) {
	start := time.Now()
	err := c.WaitReady(context.Background(), scenario.BrokerTarget(), 60*time.Second)
	return err, time.Since(start)
}

// A readiness wait on a container that exits while it boots fails at once
// with the exit code and the log tail, not after ready_timeout: before, it
// polled AMQP logins on a dead container for the whole timeout.
func TestWaitReadyFailsAtOnceWhenTheBrokerExits(t *testing.T) {
	cli, c := startBroker(t)
	ctx := context.Background()
	if err := cli.ContainerKill(ctx, c.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	for {
		info, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !info.State.Running {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := regexp.MustCompile(`^broker container "` + regexp.QuoteMeta(c.Name) + `" exited \(exit code 137\) after \d+\.\d s of waiting for an AMQP login: it will not accept one; its last log lines: .+`)
	err, took := waitReadyWithin(c)
	if err == nil || !want.MatchString(err.Error()) || took > 3*time.Second {
		t.Fatalf("stopped broker: after %s: %v", took, err)
	}

	// Started again and killed while it boots: the wait that had begun
	// ends within a poll or two of the exit.
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { err, _ := waitReadyWithin(c); done <- err }()
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	if err := cli.ContainerKill(ctx, c.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if took := time.Since(killed); err == nil || !want.MatchString(err.Error()) || took > 3*time.Second {
			t.Fatalf("killed while booting: %s after the kill: %v", took, err)
		}
		t.Logf("killed while booting: failed %s after the kill: %.200s", time.Since(killed).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("readiness wait still running 10 s after the broker exited")
	}
}

// A removed container fails the wait at once too.
func TestWaitReadyFailsAtOnceWhenTheContainerIsRemoved(t *testing.T) {
	cli, c := startBroker(t)
	if err := cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		t.Fatal(err)
	}
	err, took := waitReadyWithin(c)
	if err == nil || !strings.HasPrefix(err.Error(), `broker container "`+c.Name+`" was removed after `) || took > 3*time.Second {
		t.Fatalf("after %s: %v", took, err)
	}
}

// A paused broker is still there: the wait goes on to its timeout and says
// so, naming the address.
func TestWaitReadyOnAPausedBrokerTimesOut(t *testing.T) {
	cli, c := startBroker(t)
	ctx := context.Background()
	if err := cli.ContainerPause(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.ContainerUnpause(context.Background(), c.ID) })
	start := time.Now()
	err := c.WaitReady(ctx, scenario.BrokerTarget(), 3*time.Second)
	took := time.Since(start)
	if err == nil || !strings.HasPrefix(err.Error(), `broker "`+c.Name+`" did not accept an AMQP login on `+c.Addr()+` within 3s (last error: `) || took < 3*time.Second || took > 8*time.Second {
		t.Fatalf("after %s: %v", took, err)
	}
}
