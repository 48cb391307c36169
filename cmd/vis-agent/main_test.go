package main

import (
	"os"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/repair/repairtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	repairtest.StopWorkers()
	os.Exit(code)
}
