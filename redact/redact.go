// Package redact keeps what must never reach a user's terminal, log or
// report out of the text rmqtorture prints or stores: the password of any
// URL (DOCKER_HOST=tcp://user:pass@host, the broker's amqp://guest:guest@…)
// and terminal control sequences copied from a broker's log (colour codes,
// window titles). It is a leaf: every package may import it.
package redact

import (
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// mask replaces a password, as net/url's URL.Redacted does.
const mask = "xxxxx"

// URL returns raw with its password replaced by "xxxxx" (net/url's
// URL.Redacted). A string that does not parse as a URL is redacted as text.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Text(raw)
	}
	return u.Redacted()
}

// userinfo matches the "scheme://userinfo@" head of a URL inside free text:
// the userinfo runs to the last "@" before the path, query, fragment or a
// delimiter that cannot be in a URL (RFC 3986 §3.2.1; net/url also splits
// at the last "@").
var userinfo = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#"'<>\x60]*@`)

// Text returns s with the password of every URL in it replaced by "xxxxx":
// error messages that quote DOCKER_HOST, a URL in a log line. The userinfo
// is read by net/url (URL.Redacted); one it cannot parse is masked whole.
func Text(s string) string {
	s = knownSecrets(s)
	if !strings.Contains(s, "://") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(head string) string {
		const host = "h"
		u, err := url.Parse(head + host)
		if err != nil || u.User == nil {
			scheme, _, _ := strings.Cut(head, "://")
			return scheme + "://" + mask + "@"
		}
		return strings.TrimSuffix(u.Redacted(), host)
	})
}

// control matches terminal control sequences (ECMA-48): CSI (ESC [ … final
// byte, e.g. the colour code ESC[31m), OSC (ESC ] … BEL or ESC \, e.g. a
// window title or hyperlink), the other string sequences DCS/SOS/PM/APC
// (ESC P|X|^|_ … ESC \), their C1 forms (CSI U+009B, OSC U+009D … BEL or
// ST U+009C, DCS/SOS/PM/APC U+0090/0098/009E/009F … ST), two-byte escapes
// (ESC 7, ESC c), and any other C0 or C1 control character but tab and
// newline (a carriage return, a bell, a lone ST).
var control = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x{9b}[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\x{9c}]*(?:\x07|\x1b\\|\x{9c})?|\x{9d}[^\x07\x1b\x{9c}]*(?:\x07|\x1b\\|\x{9c})?|\x1b[PX^_][^\x1b\x{9c}]*(?:\x1b\\|\x{9c})?|[\x{90}\x{98}\x{9e}\x{9f}][^\x1b\x{9c}]*(?:\x1b\\|\x{9c})?|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f\x{80}-\x{9f}]`)

// Terminal returns s without terminal control sequences, so text copied
// from a container's log (RabbitMQ colours its console log when it thinks
// it has a terminal) reads plainly in a report, result.json or a pipe.
func Terminal(s string) string {
	return control.ReplaceAllString(s, "")
}

// Foreign makes text that came from outside rmqtorture (a container's log,
// a command's output) safe to print or store: no terminal control
// sequences, no URL passwords.
func Foreign(s string) string { return Text(Terminal(s)) }

// Strings applies Foreign to every exported string reachable from v, a
// pointer (struct fields, slice, array and map elements, through pointers
// and interfaces), in place: a result is made safe to print and store in
// one call, whichever of its fields an error or a log line reached. String
// map keys are cleaned too (two keys that clean to one keep either's
// element).
func Strings(v any) {
	walk(reflect.ValueOf(v))
}

func walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); s != "" {
				if clean := Foreign(s); clean != s {
					v.SetString(clean)
				}
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if !holdsStrings(v.Type().Elem()) {
			return
		}
		for i := range v.Len() {
			walk(v.Index(i))
		}
	case reflect.Map:
		keys := v.Type().Key().Kind() == reflect.String
		if !keys && !holdsStrings(v.Type().Elem()) {
			return
		}
		for _, k := range v.MapKeys() {
			// Map elements cannot be set in place: copy, clean, store.
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			walk(e)
			if keys {
				if ck := Foreign(k.String()); ck != k.String() {
					// A key is printed too (a dead-letter reason): store
					// the element under the clean key.
					v.SetMapIndex(k, reflect.Value{})
					k = reflect.ValueOf(ck).Convert(v.Type().Key())
				}
			}
			v.SetMapIndex(k, e)
		}
	}
}

// holdsStrings reports whether a value of type t can reach a string, so
// numeric slices (a timeline's series) are not walked element by element.
func holdsStrings(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Struct, reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Array, reflect.Map:
		return true
	}
	return false
}

// MinSecretLen is the shortest password Secret masks wherever it appears;
// a shorter one ("pw") would mask ordinary words, and is masked inside URLs
// only (Text's userinfo rule).
const MinSecretLen = 4

// secrets are the passwords the user gave this process, in every form
// they may be quoted in: raw, and escaped for a URL's path or query.
var secrets struct {
	sync.RWMutex
	forms []string
}

// Secret registers password so that Text (and so Foreign, Strings and
// every error rmqtorture prints) masks it wherever it appears, whatever
// quotes it: a client library that writes a URL without its scheme
// ("lookup alice:S3cretPW@127.0.0.1"), or escapes it ("S3cret%40PW").
// Passwords shorter than MinSecretLen are left to the URL rule.
func Secret(password string) {
	if len(password) < MinSecretLen {
		return
	}
	secrets.Lock()
	defer secrets.Unlock()
	for _, f := range []string{password, url.PathEscape(password), url.QueryEscape(password)} {
		if !slices.Contains(secrets.forms, f) {
			secrets.forms = append(secrets.forms, f)
		}
	}
	// Longest first, so a form that holds another is masked whole.
	slices.SortFunc(secrets.forms, func(a, b string) int { return len(b) - len(a) })
}

// SecretOf registers the password of raw, a URL a user gave (DOCKER_HOST,
// --uri, RMQTORTURE_URI, a Docker context's host); one net/url cannot
// parse registers what sits between its "user:" and last "@".
func SecretOf(raw string) {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			Secret(pw)
		}
	}
	// Whatever net/url made of it (a "/", "#", "?" or space in the
	// password ends its userinfo early; no scheme makes it a path), a
	// client may still quote it: what lies between "user:" and the last
	// "@" is a password too.
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	if at := strings.LastIndex(rest, "@"); at > 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			Secret(pw)
		}
	}
}

// knownSecrets masks every registered password in s.
func knownSecrets(s string) string {
	secrets.RLock()
	defer secrets.RUnlock()
	for _, f := range secrets.forms {
		s = strings.ReplaceAll(s, f, mask)
	}
	return s
}
