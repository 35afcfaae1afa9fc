package docker

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Exec runs cmd inside the broker container (as the container's user, whose
// HOME holds the Erlang cookie rabbitmqctl needs) through the Docker exec API
// and returns its stdout. A non-zero exit is an error carrying stderr. In
// the project's images that user is rabbitmq; in the official rabbitmq
// images (docker-library/rabbitmq) it is root, with HOME=/var/lib/rabbitmq
// and the CLI tools in PATH, so the CLI reads the cookie the node wrote
// (root reads a 0400 file it does not own; Erlang checks only the mode).
// Every call comes after the node's first boot or a cluster's cookie was
// written: a CLI run as root before either would create a root-owned
// cookie the node could not read.
func (c *Container) Exec(ctx context.Context, cmd ...string) (string, error) {
	created, err := c.cli.ContainerExecCreate(ctx, c.ID, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", fmt.Errorf("exec %q in %q: %w", strings.Join(cmd, " "), c.Name, err)
	}
	att, err := c.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", fmt.Errorf("exec %q in %q: %w", strings.Join(cmd, " "), c.Name, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		return "", fmt.Errorf("exec %q in %q: %w", strings.Join(cmd, " "), c.Name, ctx.Err())
	}
	if err != nil {
		return "", fmt.Errorf("exec %q in %q: read output: %w", strings.Join(cmd, " "), c.Name, err)
	}
	info, err := c.cli.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return "", fmt.Errorf("exec %q in %q: %w", strings.Join(cmd, " "), c.Name, err)
	}
	if info.ExitCode != 0 {
		return stdout.String(), fmt.Errorf("%s in %q exited %d: %s", strings.Join(cmd, " "), c.Name, info.ExitCode, strings.TrimSpace(redact.Foreign(stderr.String()+" "+stdout.String())))
	}
	return stdout.String(), nil
}

// watermarkTerm is what vm_memory_monitor reports as its high watermark: a
// fraction (0.6) or {absolute, Bytes}. Only such a term is passed back.
var watermarkTerm = regexp.MustCompile(`^(\d+(\.\d+)?|\{absolute,\s*\d+\})$`)

// MemoryAlarm raises (on) or clears a memory alarm. Raising reads the node's
// vm_memory_high_watermark and sets it to 0.00001 (far below any node's
// use) in one rabbitmqctl eval, since each rabbitmqctl call costs ~2 s of
// CLI start-up; RabbitMQ then blocks every publishing connection
// (connection.blocked; https://www.rabbitmq.com/docs/memory). Clearing
// restores the value read. Each call is bounded by ctx.
func (c *Container) MemoryAlarm(ctx context.Context, target scenario.Target, on bool) error {
	if err := single(target); err != nil {
		return err
	}
	if on {
		// Until the value is read, restoring sets RabbitMQ 4.x's default.
		if err := c.alter("given a memory alarm (vm_memory_high_watermark lowered), then cleared", func(r *Restore) { r.Watermark = "0.6" }); err != nil {
			return err
		}
		out, err := c.Exec(ctx, "rabbitmqctl", "-q", "eval",
			"W = vm_memory_monitor:get_vm_memory_high_watermark(), ok = vm_memory_monitor:set_vm_memory_high_watermark(0.00001), W.")
		if err != nil {
			return err
		}
		c.watermark = "0.6" // RabbitMQ 4.x default, if the value read is not a plain term
		if v := strings.TrimSpace(out); watermarkTerm.MatchString(v) {
			c.watermark = v
		}
		return c.alter("given a memory alarm (vm_memory_high_watermark lowered), then cleared", func(r *Restore) { r.Watermark = c.watermark })
	}
	prev := c.watermark
	if prev == "" {
		prev = "0.6"
	}
	if _, err := c.Exec(ctx, "rabbitmqctl", "-q", "eval", "ok = vm_memory_monitor:set_vm_memory_high_watermark("+prev+")."); err != nil {
		return err
	}
	c.undone(func(r *Restore) { r.Watermark = "" })
	return nil
}

// CloseConnections makes the broker node close every client connection it
// holds, on every vhost, as an operator's `rabbitmqctl
// close_all_connections --global` does (320 CONNECTION_FORCED). --global
// is what keeps it to this node: without it the command closes the
// default vhost's connections on every node of the cluster (it lists them
// with rabbit_connection_tracking:list/1, which is cluster-wide; measured
// on RabbitMQ 4.0.5: a connection held to rmq2 closed by the command run
// on rmq1), while --global lists this node's only (list_on_node/1).
func (c *Container) CloseConnections(ctx context.Context, target scenario.Target) error {
	if err := single(target); err != nil {
		return err
	}
	if err := c.alter("made to close its client connections", nil); err != nil {
		return err
	}
	_, err := c.Exec(ctx, "rabbitmqctl", "-q", "close_all_connections", "--global", "rmqtorture fault: close-connections")
	return err
}

// defaultDiskFreeLimit is RabbitMQ's default disk_free_limit.absolute
// (50 MB; https://www.rabbitmq.com/docs/disk-alarms), restored when the
// limit read before an alarm is not a plain byte count.
const defaultDiskFreeLimit = "50000000"

// byteCount is what rabbit_disk_monitor:get_disk_free_limit() returns: the
// limit in bytes. Only such a term is passed back.
var byteCount = regexp.MustCompile(`^\d+$`)

// DiskAlarm raises (on) or clears a disk alarm. Raising reads the node's
// disk free limit and free disk space and sets the limit to twice the free
// space plus 1 GB in one rabbitmqctl eval (each call costs ~2 s of CLI
// start-up); the disk monitor checks at once and RabbitMQ blocks every
// publishing connection (connection.blocked;
// https://www.rabbitmq.com/docs/disk-alarms). Clearing restores the limit
// read. Each call is bounded by ctx.
func (c *Container) DiskAlarm(ctx context.Context, target scenario.Target, on bool) error {
	if err := single(target); err != nil {
		return err
	}
	if on {
		out, err := c.Exec(ctx, "rabbitmqctl", "-q", "eval",
			"L = rabbit_disk_monitor:get_disk_free_limit(), F = rabbit_disk_monitor:get_disk_free(), ok = rabbit_disk_monitor:set_disk_free_limit(2 * F + 1000000000), L.")
		if err != nil {
			return err
		}
		c.diskLimit = defaultDiskFreeLimit
		if v := strings.TrimSpace(out); byteCount.MatchString(v) {
			c.diskLimit = v
		}
		return nil
	}
	prev := c.diskLimit
	if prev == "" {
		prev = defaultDiskFreeLimit
	}
	_, err := c.Exec(ctx, "rabbitmqctl", "-q", "eval", "ok = rabbit_disk_monitor:set_disk_free_limit("+prev+").")
	return err
}
