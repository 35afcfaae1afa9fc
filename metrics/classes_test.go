package metrics

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// countsField returns the field of Counts whose JSON name is name.
func countsField(t *testing.T, name string) (reflect.StructField, bool) {
	t.Helper()
	typ := reflect.TypeOf(Counts{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if strings.Split(f.Tag.Get("json"), ",")[0] == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// ClassSum adds exactly the fields PartitionClasses names, and every class
// named is a field of Counts: a class added to one but not the other fails
// here (and the gate's coverage test then asks for its row).
func TestClassListsMatchCounts(t *testing.T) {
	var c Counts
	v := reflect.ValueOf(&c).Elem()
	// Every other int field holds a value no sum of the classes reaches, so
	// ClassSum adding one more field shows too.
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Int {
			v.Field(i).SetInt(1 << 40)
		}
	}
	want := 0
	for i, name := range PartitionClasses {
		f, ok := countsField(t, name)
		if !ok {
			t.Fatalf("partition class %q is no field of Counts", name)
		}
		n := 1 << i
		v.FieldByIndex(f.Index).SetInt(int64(n))
		want += n
	}
	if got := c.ClassSum(); got != want {
		t.Fatalf("ClassSum %b, want %b: ClassSum and PartitionClasses name different fields", got, want)
	}
	for _, name := range CrossClasses {
		if _, ok := countsField(t, name); !ok || slices.Contains(PartitionClasses, name) {
			t.Fatalf("cross class %q: a field of Counts %v, also a partition class %v", name, ok, slices.Contains(PartitionClasses, name))
		}
	}
}
