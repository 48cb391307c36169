package pyembed

import "testing"

func TestBytesLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"/plain/path":     `b'/plain/path'`,
		`it's \ here`:     `b'it\'s \\ here'`,
		"caf\xc3\xa9\x00": `b'caf\xc3\xa9\x00'`,
		"\xff\n":          `b'\xff\x0a'`,
	} {
		if got := BytesLiteral(in); got != want {
			t.Errorf("BytesLiteral(%q) = %s, want %s", in, got, want)
		}
	}
}
