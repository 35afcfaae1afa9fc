package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/docker/docker/client"
)

// Why a container named with --container cannot be the broker, for
// CheckAttachable's callers to tell apart (errors.Is).
var (
	ErrNoSuchContainer  = errors.New("no such container")
	ErrContainerStopped = errors.New("container not running")
	ErrNoAMQPPort       = errors.New("container publishes no AMQP port")
)

// kindError is an error message of its own that also matches a kind.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// CheckAttachable checks, read-only, that the container nameOrID exists,
// runs and publishes 5672/tcp on the host, as Attach needs: a run checks it
// before it starts anything. The error matches ErrNoSuchContainer,
// ErrContainerStopped or ErrNoAMQPPort; any other is the Docker call's own.
func CheckAttachable(ctx context.Context, cli *client.Client, nameOrID string) error {
	info, err := cli.ContainerInspect(ctx, nameOrID)
	switch {
	case client.IsErrNotFound(err):
		return &kindError{fmt.Sprintf("no container named %q (docker ps lists the running ones)", nameOrID), ErrNoSuchContainer}
	case err != nil:
		return fmt.Errorf("inspect container %q: %w", nameOrID, err)
	case info.State == nil || !info.State.Running:
		return &kindError{fmt.Sprintf("container %q is not running; start it first (docker start %s)", nameOrID, nameOrID), ErrContainerStopped}
	}
	c := &Container{Name: nameOrID}
	if err := c.readPort(info); err != nil {
		return &kindError{err.Error(), ErrNoAMQPPort}
	}
	return nil
}
