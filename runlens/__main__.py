from runlens.cli import main

main()
