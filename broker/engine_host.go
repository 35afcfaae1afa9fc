package broker

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/client"

	"github.com/rmqtorture/rmqtorture/redact"
)

// DefaultAddress is the host address a broker's ports are published on,
// and the one clients dial, unless the user names another
// (CreateOptions.Address, --broker-address).
const DefaultAddress = "127.0.0.1"

// EngineHost is the Docker Engine rmqtorture talks to, as DOCKER_HOST names
// it (the local socket, unix:///var/run/docker.sock, when unset), with any
// password masked: for logs and error messages. DOCKER_CONTEXT and the
// Docker CLI's contexts are not read; DOCKER_HOST is.
func EngineHost() string {
	host := os.Getenv(client.EnvOverrideHost)
	if host == "" {
		host = client.DefaultDockerHost
	}
	return redact.URL(host)
}

// clientOpts are the Docker client's options for the engine DOCKER_HOST
// names, as the Docker CLI builds them (cli/context/docker/load.go,
// ClientOpts): unix:// and tcp:// through client.FromEnv, which also reads
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH for TLS and DOCKER_API_VERSION;
// ssh://[user@]host[:port][/socket] through the CLI's connection helper,
// which runs `ssh … docker system dial-stdio` on the remote host (the
// moby client cannot dial ssh:// itself). ssh reads its own configuration
// (~/.ssh/config: keys, known hosts, ports), as `docker -H ssh://…` does.
func clientOpts() ([]client.Opt, error) {
	host := os.Getenv(client.EnvOverrideHost)
	if !strings.HasPrefix(host, "ssh://") {
		return []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}, nil
	}
	helper, err := connhelper.GetConnectionHelper(host)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST=%s: %w", EngineHost(), masked{err})
	}
	// No TLS and no proxy: ssh carries the connection. Every new
	// connection is a new ssh process (100-300 ms), so more idle ones are
	// kept than net/http's 2: a kill waits for no ssh handshake while the
	// log follower and inspect polls hold theirs.
	tr := &http.Transport{DialContext: helper.Dialer, MaxIdleConnsPerHost: 8}
	return []client.Opt{
		client.WithHTTPClient(&http.Client{Transport: tr}),
		client.WithHost(helper.Host),
		client.WithDialContext(helper.Dialer),
		client.WithVersionFromEnv(),
		client.WithAPIVersionNegotiation(),
	}, nil
}

// CheckAddress checks a host address for CreateOptions.Address: an IPv4 or
// IPv6 literal that a client can dial (not 0.0.0.0, ::, or multicast),
// since Docker publishes a port on an IP, not a name. It returns the
// canonical spelling.
func CheckAddress(s string) (string, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("%q is not an IP address (Docker publishes ports on an IP address of the engine's host, e.g. 127.0.0.1 or 192.0.2.10)", s)
	}
	if ip.IsUnspecified() || ip.IsMulticast() {
		return "", fmt.Errorf("%q cannot be dialled: name the one address of the engine's host that clients reach it on, e.g. 127.0.0.1", s)
	}
	return ip.Unmap().String(), nil
}

// hostIP is addr, or DefaultAddress when addr is empty.
func hostIP(addr string) string {
	if addr == "" {
		return DefaultAddress
	}
	return addr
}

// freePort asks the kernel for a free port on addr (empty: DefaultAddress).
// An address that is not this machine's (a remote engine's host) cannot be
// asked: a port free on 127.0.0.1 is taken instead, and should it be in
// use over there, the engine refuses to start the container and says so.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP(addr), "0"))
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		l, err = net.Listen("tcp", net.JoinHostPort(DefaultAddress, "0"))
	}
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", hostIP(addr), err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree checks that port is free on addr by listening on it for a
// moment. On an address that is not this machine's it cannot tell, and
// returns nil: the engine reports a port in use when it starts the broker.
func PortFree(addr string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP(addr), fmt.Sprint(port)))
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		return nil
	}
	if err != nil {
		return err
	}
	return l.Close()
}

// masked is an error whose text has every URL password masked (the Docker
// client quotes DOCKER_HOST whole), still unwrapping to the error itself.
type masked struct{ err error }

func (m masked) Error() string { return redact.Text(m.err.Error()) }
func (m masked) Unwrap() error { return m.err }
