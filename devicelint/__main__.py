from devicelint.cli import main

main()
