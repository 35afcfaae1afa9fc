package docker

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Resource is a container, network or volume carrying rmqtorture's
// LabelManaged: what cleanup and the start of a run look at.
type Resource struct {
	Kind  string // "container", "network" or "volume"
	ID    string
	Name  string
	State string // a container's state (running, exited, paused, created); "" otherwise
	Run   string // its run id
	Owner Owner
	// Known is false when the owner labels are missing (an rmqtorture
	// before them, or made by hand): it is then nobody's in particular.
	Known bool
	Keep  bool // created with --keep
}

// Mine reports whether this user on this host created r.
func (r Resource) Mine() bool { return r.Known && r.Owner.Mine() }

// Scope chooses which labelled resources cleanup removes. The default (zero)
// scope takes those this user created on this host whose rmqtorture process
// is gone, but not --keep ones.
type Scope struct {
	Run   string // only this run's, --keep ones included
	All   bool   // every rmqtorture resource (any user, any host) but --keep ones
	Force bool   // also those whose rmqtorture process still runs
}

// Skip says why r stays under s, or "" when it goes. Foreign is true for
// what the default scope leaves because another user, another host or an
// older rmqtorture made it (cleanup counts those rather than listing them).
func (s Scope) Skip(r Resource) (why string, foreign bool) {
	switch {
	case s.Run != "" && r.Run != s.Run:
		return "another run", true
	case s.Run == "" && !s.All && !r.Mine():
		return "made by another user, another host or an older rmqtorture (--all or --run removes it)", true
	case s.Run == "" && r.Keep:
		return "kept with --keep (--run " + r.Run + " removes it)", false
	case !s.Force && r.Owner.Unseen():
		ns := "PID namespace " + r.Owner.PIDNS
		if r.Owner.PIDNS == "" {
			ns = "it recorded no PID namespace"
		}
		return fmt.Sprintf("its rmqtorture process %d ran outside this container (%s), where this one cannot tell whether it still runs (cleanup on the host, or --force, removes it)", r.Owner.PID, ns), false
	case !s.Force && r.Owner.Alive():
		return fmt.Sprintf("its rmqtorture process %d is still running (--force removes it anyway)", r.Owner.PID), false
	}
	return "", false
}

// Labelled lists every container (in any state), network and volume that
// carries LabelManaged, containers first, each kind sorted by name.
func Labelled(ctx context.Context, cli *client.Client) ([]Resource, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	var out []Resource
	ctrs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range ctrs {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = c.Names[0][1:]
		}
		out = append(out, resource("container", c.ID, name, c.Labels, c.State))
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range nets {
		out = append(out, resource("network", n.ID, n.Name, n.Labels, ""))
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vols.Volumes {
		out = append(out, resource("volume", v.Name, v.Name, v.Labels, ""))
	}
	rank := map[string]int{"container": 0, "network": 1, "volume": 2}
	slices.SortStableFunc(out, func(a, b Resource) int {
		if d := rank[a.Kind] - rank[b.Kind]; d != 0 {
			return d
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out, nil
}

func resource(kind, id, name string, labels map[string]string, state string) Resource {
	o, known := ownerOf(labels)
	return Resource{Kind: kind, ID: id, Name: name, State: state, Run: labels[LabelRun], Owner: o, Known: known, Keep: labels[LabelKeep] == "true"}
}

// RemoveResource removes r after checking its label again: a container by
// force with its anonymous volumes, a network (its containers go first),
// a volume. One already gone counts as removed.
func RemoveResource(ctx context.Context, cli *client.Client, r Resource) error {
	var err error
	switch r.Kind {
	case "container":
		err = RemoveLeftover(ctx, cli, r.ID)
	case "network":
		var n network.Inspect
		if n, err = cli.NetworkInspect(ctx, r.ID, network.InspectOptions{}); err == nil {
			if n.Labels[LabelManaged] != "true" {
				return fmt.Errorf("refusing to remove network %s: no %s label", r.Name, LabelManaged)
			}
			err = cli.NetworkRemove(ctx, r.ID)
		}
	case "volume":
		var v volume.Volume
		if v, err = cli.VolumeInspect(ctx, r.ID); err == nil {
			if v.Labels[LabelManaged] != "true" {
				return fmt.Errorf("refusing to remove volume %s: no %s label", r.Name, LabelManaged)
			}
			err = cli.VolumeRemove(ctx, r.ID, false)
		}
	default:
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove %s %s: %w", r.Kind, r.Name, err)
	}
	return nil
}

// created holds the containers this process created and has not removed
// yet (--keep ones are not held): what RemoveCreated removes when the
// process must exit at once.
var created = struct {
	sync.Mutex
	m map[string]*Container
}{m: map[string]*Container{}}

func track(c *Container) {
	created.Lock()
	defer created.Unlock()
	created.m[c.ID] = c
}

func untrack(id string) {
	created.Lock()
	defer created.Unlock()
	delete(created.m, id)
}

// createdNets holds the networks this process created (a cluster's) and
// has not removed (--keep ones are not held), by id.
var createdNets = struct {
	sync.Mutex
	m map[string]trackedNet
}{m: map[string]trackedNet{}}

type trackedNet struct {
	cli  *client.Client
	name string
}

func trackNet(cli *client.Client, id, name string) {
	createdNets.Lock()
	defer createdNets.Unlock()
	createdNets.m[id] = trackedNet{cli, name}
}

func untrackNet(id string) {
	createdNets.Lock()
	defer createdNets.Unlock()
	delete(createdNets.m, id)
}

// RemoveCreated force-removes, in parallel, every container this process
// created and has not removed (nor kept with --keep), within ctx: the last
// act of a process told to exit at once (a second Ctrl-C). A removal the
// ordinary path already started counts once the container is gone. It
// returns the names removed and the errors of those that were not. The
// networks this process created (a cluster's) go next, once their
// containers are gone; only their errors are returned.
func RemoveCreated(ctx context.Context) (removed []string, errs []error) {
	defer func() { errs = append(errs, removeCreatedNets(ctx)...) }()
	created.Lock()
	list := make([]*Container, 0, len(created.m))
	for _, c := range created.m {
		list = append(list, c)
	}
	created.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range list {
		wg.Go(func() {
			err := removeNow(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			removed = append(removed, c.Name)
			untrack(c.ID)
		})
	}
	wg.Wait()
	slices.Sort(removed)
	return removed, errs
}

// removeCreatedNets removes, in parallel, every network this process
// created and has not removed, retrying (every 100 ms, within ctx) while
// a container the ordinary path is removing still holds an endpoint on it.
func removeCreatedNets(ctx context.Context) (errs []error) {
	createdNets.Lock()
	ids := slices.Collect(maps.Keys(createdNets.m))
	nets := maps.Clone(createdNets.m)
	createdNets.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			n := nets[id]
			for {
				err := n.cli.NetworkRemove(ctx, id)
				if err == nil || client.IsErrNotFound(err) {
					untrackNet(id)
					return
				}
				select {
				case <-ctx.Done():
					mu.Lock()
					errs = append(errs, fmt.Errorf("remove network %q: %w", n.name, err))
					mu.Unlock()
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// removeNow force-removes c, then waits until it is gone (removeAndWait).
func removeNow(ctx context.Context, c *Container) error {
	return removeAndWait(ctx, c.cli, c.ID, c.Name)
}

// removeAndWait force-removes the container id (with its anonymous
// volumes) and, when that fails, polls every 100 ms until it is gone or
// ctx ends: a removal already under way (another process's sweep of the
// same leftover, say) makes ContainerRemove fail with a conflict while
// the container still exists. One that is gone counts as removed.
func removeAndWait(ctx context.Context, cli *client.Client, id, name string) error {
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	for err != nil {
		if client.IsErrNotFound(err) {
			return nil
		}
		if _, ierr := cli.ContainerInspect(ctx, id); client.IsErrNotFound(ierr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove container %q: %w", name, err)
		case <-time.After(100 * time.Millisecond):
		}
		err = cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	return nil
}

// attachedNow holds the containers this process attached to (--container),
// for AlteredAttached.
var attachedNow = struct {
	sync.Mutex
	list []*Container
}{}

func trackAttached(c *Container) {
	attachedNow.Lock()
	defer attachedNow.Unlock()
	attachedNow.list = append(attachedNow.list, c)
}

// AlteredAttached describes each container rmqtorture did not create that
// this process's faults have left changed ("rabbit: unpause (recorded in
// FILE)"): what a process exiting at once leaves for the next run or
// cleanup to restore.
func AlteredAttached() []string {
	attachedNow.Lock()
	defer attachedNow.Unlock()
	var out []string
	for _, c := range attachedNow.list {
		if file, steps := c.pendingSteps(); len(steps) > 0 {
			out = append(out, fmt.Sprintf("%s: %s (recorded in %s)", c.Name, strings.Join(steps, ", "), file))
		}
	}
	return out
}
