from picoora.cli.app import main

main()
