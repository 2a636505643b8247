import type { LinkingMessages } from '../en.js'

const he: LinkingMessages = {
  signInMethods: 'שיטות התחברות',
  loadingMethods: 'טוענים שיטות התחברות…',
  signInToManage: 'היכנסו לאפליקציה כדי לראות ולשנות את שיטות הכניסה שלכם.',
  kindEmail: 'אימייל',
  kindPasskey: 'מפתח גישה',
  kindWallet: 'ארנק',
  kindOAuth: 'חשבון חברתי',
  linkedOn: 'קושר ב-{date}',
  remove: 'הסרה',
  removeMethod: 'הסרת {label}',
  onlyMethod: 'זו הדרך היחידה שלך להתחבר. יש להוסיף דרך נוספת לפני ההסרה.',
  addMethod: 'הוספת שיטת התחברות',
  emailToLink: 'כתובת האימייל להוספה',
  sendCode: 'שליחת קוד',
  typeCodeInFrame: 'יש להקליד בחלון את הקוד שנשלח אל {email}.',
  signInWalletToLink: 'יש לחתום על ההודעה ב-{name}',
  linking: 'מקשרים…',
  methodLinked: '{label} קושר. אפשר להתחבר איתו מעכשיו.',
  removing: 'מסירים…',
  methodRemoved: '{label} הוסר.',
  secondFactor: 'גורם שני',
  mfaOff: 'לא הוגדר גורם שני.',
  mfaOn: 'הוגדרה אפליקציית אימות.',
  setUpTotp: 'הגדרת אפליקציית אימות',
  settingUpTotp: 'מגדירים את אפליקציית האימות…',
  totpEnrolled: 'אפליקציית האימות הוגדרה. כדאי לשמור את קודי השחזור במקום בטוח.',
  methodsStatus: 'מצב שיטות ההתחברות',
}

export default he
