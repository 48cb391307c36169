package session

import (
	"slices"
	"testing"
)

func TestEnviron(t *testing.T) {
	got := Environ([]string{"PATH=/home/u/bin:/usr/bin", "HOME=/home/u", "LANG=de_DE.UTF-8", "LC_ALL=de_DE.UTF-8",
		"TZ=Asia/Tokyo", "PYTHONPATH=/x", "OPENAI_API_KEY=secret", "VIS_HOME=/first", "VIS_ENV_IDLE_TTL_MS=5", "USER=u", "bad", "VIS_HOME=/v",
		"SSL_CERT_FILE=/ca.pem", "https_proxy=http://proxy:3128", "NO_PROXY=localhost", "UV_INDEX_URL=https://u:p@x/simple",
		"AWS_SECRET_ACCESS_KEY=k", "GIT_SSL_CAINFO=/ca.pem"})
	want := []string{"HOME=/home/u", "LANG=C.UTF-8", "NO_PROXY=localhost", "PATH=" + SessionPath, "SSL_CERT_FILE=/ca.pem",
		"USER=u", "VIS_ENV_IDLE_TTL_MS=5", "VIS_HOME=/v", "https_proxy=http://proxy:3128"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ:\n got %q\nwant %q", got, want)
	}
}
