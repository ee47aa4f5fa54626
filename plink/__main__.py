from plink._entry import main

main()
