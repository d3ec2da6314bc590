from benchmarks.third.generate import main

raise SystemExit(main())
