package demo

import (
	"os"
	"testing"

	"github.com/mightyetl/leasefence/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Run(m)) }
