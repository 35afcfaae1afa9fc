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
	"strings"
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
// (ESC P|X|^|_ … ESC \), the C1 CSI (U+009B), two-byte escapes (ESC 7,
// ESC c), and any other C0 control character but tab and newline (a
// carriage return, a bell).
var control = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x{9b}[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f]`)

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
// one call, whichever of its fields an error or a log line reached. Map
// keys are left as they are.
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
		if !holdsStrings(v.Type().Elem()) {
			return
		}
		for _, k := range v.MapKeys() {
			// Map elements cannot be set in place: copy, clean, store.
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			walk(e)
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
