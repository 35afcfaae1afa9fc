package broker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
)

// External is a broker rmqtorture did not start and reaches only over AMQP
// (run --uri): no container, no Docker, no fault. Its URL carries the
// credentials; every text External makes for people (Addr, Redacted,
// errors) leaves the password out.
type External struct {
	url string
	// Addr is where AMQP is reached, without credentials:
	// "127.0.0.1:5672, vhost vh".
	Addr string
	// Redacted is the URL with its password replaced by "xxxxx".
	Redacted string
	// loggedIn: a login has succeeded once. Until then a refused TCP
	// connection ends WaitReady after refusedGrace: the user said the
	// broker runs, so nothing listening is a wrong address, not a boot.
	loggedIn bool
}

// refusedGrace is how long WaitReady's first wait retries a refused TCP
// connection (3 s).
const refusedGrace = 3 * time.Second

// ErrBadURI marks a --uri that is not an AMQP URI.
var ErrBadURI = errors.New("not an AMQP URI")

// NewExternal checks raw, an AMQP URI (amqp://user:password@host:port/vhost,
// or amqps:// for TLS; port default 5672 or 5671; vhost percent-decoded
// from the path, default "/"), as amqp091-go reads it. Its errors never
// quote raw: it may hold a password.
func NewExternal(raw string) (*External, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL in its error.
		return nil, fmt.Errorf("%w: it does not parse as a URL (a password with a reserved character such as @, :, /, ? or # must be percent-encoded)", ErrBadURI)
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return nil, fmt.Errorf("%w: the scheme is %q; use amqp:// (or amqps:// for TLS)", ErrBadURI, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: it names no host", ErrBadURI)
	}
	p, err := amqp.ParseURI(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadURI, uriProblem(err, u))
	}
	if p.Port <= 0 || p.Port > 65535 {
		return nil, fmt.Errorf("%w: port %d is not within 1–65535", ErrBadURI, p.Port)
	}
	return &External{url: raw, Addr: fmt.Sprintf("%s:%d, vhost %s", p.Host, p.Port, p.Vhost), Redacted: u.Redacted()}, nil
}

// uriProblem says what amqp091-go refused in words that quote no part of
// the userinfo.
func uriProblem(err error, u *url.URL) string {
	switch {
	case strings.Contains(u.String(), " ") || strings.Contains(err.Error(), "whitespace"):
		return "it contains a space"
	case u.Port() != "":
		return fmt.Sprintf("port %q is not a number", u.Port())
	}
	return "amqp091-go does not read it"
}

// URL is the broker's AMQP URL, credentials included: hand it only to the
// client library.
func (e *External) URL() string { return e.url }

// WaitReady returns once an AMQP connection with login succeeds, or an
// error once timeout has passed or ctx is done. A broker that answers and
// refuses the login (wrong password, no such vhost, no access) fails at
// once: waiting would not change its answer.
func (e *External) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	began := time.Now()
	for {
		conn, err := amqp.DialConfig(e.url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second), Properties: amqp.Table{"connection_name": "rmqtorture-readiness"}})
		if err == nil {
			_ = conn.CloseDeadline(time.Now().Add(2 * time.Second))
			e.loggedIn = true
			return nil
		}
		if !e.loggedIn && errors.Is(err, syscall.ECONNREFUSED) && time.Since(began) >= refusedGrace {
			return fmt.Errorf("nothing accepts connections at %s (connection refused for %s): is the broker running, and are the host and port right?", e.Addr, refusedGrace)
		}
		var refused *amqp.Error
		if errors.As(err, &refused) { // ErrCredentials, ErrVhost, a connection.close
			return fmt.Errorf("the broker at %s refused the login: %w", e.Addr, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the broker at %s did not accept an AMQP login within %s (last error: %v)", e.Addr, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ServerVersion is the broker's product and version from the AMQP
// connection.start server properties ("RabbitMQ 4.0.5"), "" when it cannot
// be read.
func (e *External) ServerVersion() string {
	return amqpx.ServerVersion(e.url)
}
