from benchmarks.heldout.generate import main

raise SystemExit(main())
