from arena_tool.cli import main

raise SystemExit(main())
