from tileport.cli import main

raise SystemExit(main())
