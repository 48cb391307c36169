package host

import (
	"slices"
	"strings"
	"testing"
)

func TestValidPreload(t *testing.T) {
	long := strings.Repeat("a", 101)
	got := validPreload([]string{"numpy", "_private", "café", "", "1abc", "a.b", "os; x", long, "pandas2"})
	if want := []string{"numpy", "_private", "café", "pandas2"}; !slices.Equal(got, want) {
		t.Errorf("validPreload = %q, want %q", got, want)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = "m" + strings.Repeat("x", i)
	}
	if n := len(validPreload(many)); n != maxPreload {
		t.Errorf("%d names kept, want %d", n, maxPreload)
	}
	if !covers([]string{"numpy", "pandas"}, []string{"pandas"}) || covers([]string{"numpy"}, []string{"numpy", "scipy"}) {
		t.Error("covers")
	}
}
